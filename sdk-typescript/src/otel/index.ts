// "@orch8/sdk/otel": the OpenTelemetry implementation of the SDK's Telemetry interface
// (docs/protocol.md section 15). Only this subpath imports @opentelemetry/api (an optional
// peer dependency); the main entry "@orch8/sdk" never does.
import {
  context, metrics, SpanKind, SpanStatusCode, trace,
  type MeterProvider, type Tracer, type TracerProvider,
} from "@opentelemetry/api";
import type { EnqueuedIds, Telemetry, WorkerIdentity, WorkerTelemetry } from "../telemetry.js";
import type { NewTask } from "../types.js";
import { SDK_VERSION } from "../version.js";
import { ATTR, queuesOf, SCOPE, spanName, SYSTEM } from "./names.js";
import { injectHeaders } from "./traceparent.js";
import { OtelWorkerTelemetry, errorType } from "./worker.js";

export { extractHeaders, injectHeaders } from "./traceparent.js";
export type { Telemetry } from "../telemetry.js";

/** Options of `openTelemetry()`; without them the global providers are used. */
export interface OpenTelemetryOptions {
  /** Default: the global tracer provider (`trace.getTracerProvider()`), read at first use. */
  tracerProvider?: TracerProvider;
  /** Default: the global meter provider (`metrics.getMeterProvider()`), read when a Worker is built. */
  meterProvider?: MeterProvider;
}

/**
 * The telemetry object to pass as the `telemetry` option of `Orch8Client` and `Worker`:
 * producer spans and `traceparent` headers on enqueue (P-TEL-1), receive and process spans
 * (P-TEL-3) and the worker metrics on the meter `orch8` (P-TEL-4).
 */
export function openTelemetry(options: OpenTelemetryOptions = {}): Telemetry {
  return new OpenTelemetry(options);
}

class OpenTelemetry implements Telemetry {
  private cachedTracer: Tracer | undefined;

  constructor(private readonly o: OpenTelemetryOptions) {}

  /** Resolved lazily: an application may register its providers after building clients. */
  private get tracer(): Tracer {
    this.cachedTracer ??= (this.o.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE, SDK_VERSION);
    return this.cachedTracer;
  }

  /**
   * P-TEL-1: a PRODUCER span `send <queue>`, child of the caller's current span; a batch to
   * several queues is `send` alone, without `messaging.destination.name`.
   */
  async enqueue(tasks: readonly NewTask[], batch: boolean, send: (tasks: NewTask[]) => Promise<EnqueuedIds>): Promise<void> {
    const queue = queuesOf(tasks);
    const span = this.tracer.startSpan(spanName("send", queue), {
      kind: SpanKind.PRODUCER,
      attributes: {
        [ATTR.system]: SYSTEM,
        [ATTR.operation]: "send",
        ...(queue === undefined ? {} : { [ATTR.destination]: queue }),
        ...(batch ? { [ATTR.batchCount]: tasks.length } : {}),
      },
    }, context.active());
    const sc = span.spanContext();
    try {
      const ids = await send(tasks.map((t) => ({ ...t, headers: injectHeaders(t.headers, sc) })));
      if (!batch && ids[0] !== undefined) span.setAttribute(ATTR.messageId, ids[0]);
    } catch (err) {
      span.setAttribute(ATTR.errorType, errorType(err));
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  }

  worker(info: WorkerIdentity): WorkerTelemetry {
    const meter = (this.o.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE, SDK_VERSION);
    return new OtelWorkerTelemetry(this.tracer, meter, info);
  }
}
