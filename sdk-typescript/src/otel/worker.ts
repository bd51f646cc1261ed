// The worker's spans (P-TEL-3) and instruments (P-TEL-4) on OpenTelemetry.
import {
  context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace,
  type Attributes, type Counter, type Gauge, type Histogram, type Meter, type SpanContext, type Tracer, type UpDownCounter,
} from "@opentelemetry/api";
import type { PollLink, TaskTelemetry, WorkerIdentity, WorkerTelemetry } from "../telemetry.js";
import type { ClaimedTask } from "../types.js";
import type { Outcome } from "../worker/task-run.js";
import { ATTR, METRIC, queueOf, queuesOf, SECONDS_BUCKETS, spanName, SYSTEM } from "./names.js";
import { extractHeaders } from "./traceparent.js";

/** `error.type` of a failed call: the problem code when the server sent one, else the error's name. */
export function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code) return code;
  return err instanceof Error ? err.name : typeof err;
}

export class OtelWorkerTelemetry implements WorkerTelemetry {
  private readonly duration: Histogram;
  private readonly scheduleToStart: Histogram;
  private readonly completed: Counter;
  private readonly failed: Counter;
  private readonly polls: Counter;
  private readonly heartbeats: Counter;
  private readonly leaseLosses: Counter;
  private readonly inFlight: UpDownCounter;
  private readonly slotsFree: Gauge;

  constructor(private readonly tracer: Tracer, meter: Meter, private readonly info: WorkerIdentity) {
    const seconds = { advice: { explicitBucketBoundaries: SECONDS_BUCKETS } };
    this.duration = meter.createHistogram(METRIC.duration.name, { ...METRIC.duration, ...seconds });
    this.scheduleToStart = meter.createHistogram(METRIC.scheduleToStart.name, { ...METRIC.scheduleToStart, ...seconds });
    this.completed = meter.createCounter(METRIC.completed.name, METRIC.completed);
    this.failed = meter.createCounter(METRIC.failed.name, METRIC.failed);
    this.polls = meter.createCounter(METRIC.polls.name, METRIC.polls);
    this.heartbeats = meter.createCounter(METRIC.heartbeats.name, METRIC.heartbeats);
    this.leaseLosses = meter.createCounter(METRIC.leaseLosses.name, METRIC.leaseLosses);
    this.inFlight = meter.createUpDownCounter(METRIC.inFlight.name, METRIC.inFlight);
    this.slotsFree = meter.createGauge(METRIC.slotsFree.name, METRIC.slotsFree);
    this.slotsFree.record(info.concurrency);
  }

  /**
   * P-TEL-3: a poll that claimed tasks becomes a CLIENT span `receive <queue>` over its wait
   * (`receive` alone, without `messaging.destination.name`, when they came from several queues).
   */
  polled(startedAt: number, tasks: readonly ClaimedTask[] | undefined): PollLink {
    const outcome = tasks === undefined ? "error" : tasks.length > 0 ? "claimed" : "empty";
    this.polls.add(1, { [ATTR.outcome]: outcome });
    if (tasks === undefined || tasks.length === 0) return undefined;
    const queue = queuesOf(tasks);
    // Started only once tasks came back (an empty long-poll leaves no span), dated to the send.
    const span = this.tracer.startSpan(spanName("receive", queue), {
      kind: SpanKind.CLIENT,
      startTime: startedAt,
      root: true,
      attributes: {
        [ATTR.system]: SYSTEM,
        [ATTR.operation]: "receive",
        ...(queue === undefined ? {} : { [ATTR.destination]: queue }),
        [ATTR.batchCount]: tasks.length,
        [ATTR.workerId]: this.info.workerId,
      },
    }, ROOT_CONTEXT);
    span.end();
    return span.spanContext();
  }

  /** P-TEL-3: a CONSUMER span `process <queue>`, child of the task's traceparent, linked to the poll. */
  taskStarted(task: ClaimedTask, claimedAt: number, poll: PollLink): TaskTelemetry {
    const queue = queueOf(task);
    const metricAttrs: Attributes = { [ATTR.destination]: queue, [ATTR.handler]: task.handler_name };
    // P-TEL-4: absent ready_at (an older server) means unknown: nothing recorded.
    const readyAt = task.ready_at === undefined ? NaN : Date.parse(task.ready_at);
    if (Number.isFinite(readyAt)) this.scheduleToStart.record(Math.max(0, claimedAt - readyAt) / 1000, metricAttrs);
    const remote = extractHeaders(task.headers);
    const parent = remote ? trace.setSpanContext(ROOT_CONTEXT, remote) : ROOT_CONTEXT;
    const span = this.tracer.startSpan(`process ${queue}`, {
      kind: SpanKind.CONSUMER,
      root: remote === undefined,
      links: poll === undefined ? [] : [{ context: poll as SpanContext }],
      attributes: {
        [ATTR.system]: SYSTEM,
        [ATTR.operation]: "process",
        [ATTR.destination]: queue,
        [ATTR.messageId]: task.id,
        [ATTR.handler]: task.handler_name,
        [ATTR.attempt]: task.attempt,
        [ATTR.workerId]: this.info.workerId,
      },
    }, parent);
    const current = trace.setSpan(parent, span);
    return {
      run: <T>(fn: () => T): T => context.with(current, fn),
      ended: (outcome: Outcome, code: string | undefined, handlerSeconds: number | undefined) => {
        span.setAttribute(ATTR.outcome, outcome);
        if (outcome === "failed") {
          span.setAttribute(ATTR.errorType, code ?? "");
          span.setStatus({ code: SpanStatusCode.ERROR, message: code ?? "" });
        }
        span.end();
        if (handlerSeconds !== undefined) this.duration.record(handlerSeconds, { ...metricAttrs, [ATTR.outcome]: outcome });
        if (outcome === "completed") this.completed.add(1, metricAttrs);
        else if (outcome === "failed") this.failed.add(1, { ...metricAttrs, [ATTR.errorType]: code ?? "" });
        else if (outcome === "lease_lost") this.leaseLosses.add(1, metricAttrs);
      },
    };
  }

  heartbeat(ok: boolean): void {
    this.heartbeats.add(1, { [ATTR.outcome]: ok ? "ok" : "error" });
  }

  held(delta: 1 | -1, free: number): void {
    this.inFlight.add(delta);
    this.slotsFree.record(free);
  }
}
