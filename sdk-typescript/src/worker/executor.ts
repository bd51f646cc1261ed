// Runs one claimed task's handler and delivers its result exactly once, or not at all when
// the lease is gone (P-SDK-5, P-SDK-6, P-SDK-9), counting each task once (P-SDK-11).
import type { Orch8Client } from "../client.js";
import { Backoff, sleep } from "../backoff.js";
import { LeaseLostError, Orch8Error, TaskCancelledError } from "../errors.js";
import { isOutage, outageWait } from "../outage.js";
import type { TaskFailureReport, TaskRelease } from "../types.js";
import { CompletionBatcher, OUTAGE_INITIAL_MS, OUTAGE_MAX_MS, refusesContent } from "./batcher.js";
import { boundReport, refusedReport } from "./bound.js";
import { describeCause } from "./cause.js";
import { TaskContext } from "./context.js";
import { Yield } from "./errors.js";
import { taskFields, type WorkerLog } from "./logs.js";
import { checkOutput, InvalidOutputError } from "./output.js";
import { failureReport, invalidOutputReport, outputRejectedReport, yieldRelease } from "./report.js";
import type { ErrorOperation, WorkerHooks } from "./stats.js";
import type { LossReason, Outcome, TaskRun } from "./task-run.js";

/** A handler: gets the task context, returns the task's output (any JSON value). */
export type Handler = (ctx: TaskContext) => unknown | Promise<unknown>;

export { OUTAGE_INITIAL_MS, OUTAGE_MAX_MS };

/** P-SDK-33: the worker's clock says the task's good_until has passed. */
export function expired(goodUntil: string | null | undefined, now: number = Date.now()): boolean {
  return typeof goodUntil === "string" && now >= Date.parse(goodUntil);
}

export interface ExecutorDeps {
  client: Orch8Client;
  workerId: string;
  handlers: Record<string, Handler>;
  leaseMs: number | undefined;
  log: WorkerLog;
  count(outcome: Outcome): void;
  /** P-SDK-3: `run`'s completion goes to the batcher; its slot frees up now. */
  handOver(run: TaskRun): void;
  hook<K extends keyof WorkerHooks>(name: K, ...args: Parameters<NonNullable<WorkerHooks[K]>>): void;
  /** A call failed: tells onError (the caller logs it). */
  error(operation: ErrorOperation, error: unknown): void;
}

export class TaskExecutor {
  /** Completions go out group-commit style through the batch endpoint (P-SDK-12). */
  private readonly completions: CompletionBatcher;

  constructor(private readonly d: ExecutorDeps) {
    this.completions = new CompletionBatcher(d.client, (err, line, request) => {
      if (line) d.log.callFailed("complete", err, line.subject, line.then, line.retryInMs === undefined ? {} : { retry_in_ms: line.retryInMs });
      if (request) d.error("complete", err);
    });
  }

  /** Counts `run` once under `outcome` (P-SDK-11: claimed = the sum of outcomes + in flight). */
  private finish(run: TaskRun, outcome: Outcome, code?: string): void {
    if (run.outcome !== undefined) return;
    run.outcome = outcome;
    this.d.count(outcome);
    if (run.tel !== undefined) {
      // P-TEL-3, P-TEL-4: a loss may end the span while the handler still runs.
      const ms = run.handlerStartedAt === undefined ? undefined : run.handlerMs || performance.now() - run.handlerStartedAt;
      run.tel.ended(outcome, code, ms === undefined ? undefined : ms / 1000);
    }
    if (outcome === "lease_lost" || outcome === "cancelled") this.d.hook("onTaskAbandoned", { task: run.task, reason: outcome });
  }

  /** Marks `run` lost (lease_lost / cancelled), fires its signal, counts it once. */
  lose = (run: TaskRun, by: Exclude<LossReason, "shutdown">, error: Error): void => {
    // P-SDK-22: a run already counted (completed, failed) was not given up; never say it was.
    if (run.outcome !== undefined) return;
    if (!run.settle(by, error)) return;
    this.d.log.line(by === "cancelled" ? "info" : "warn", "abandoned", `task given up, no result sent: ${by}`,
      { ...taskFields(run.task), reason: by }, describeCause(error));
    this.finish(run, by);
  };

  /** Runs the handler, then reports its result unless the run was settled meanwhile. */
  async execute(run: TaskRun): Promise<void> {
    if (expired(run.task.good_until)) {
      // P-SDK-33: it waited past its deadline (behind a handler that kept the event loop
      // busy, say): never run it; released, the server ends it expired.
      run.phase = "delivering";
      await this.release(run, { lease_id: run.leaseId, delay_ms: 0 }, "expired");
      return;
    }
    const handler = this.d.handlers[run.task.handler_name];
    if (!handler) {
      // P-SDK-14: no handler here will ever run it; fail it for good at once.
      const known = Object.keys(this.d.handlers);
      this.rejected(run, "no_handler", `no handler named ${JSON.stringify(run.task.handler_name)} (known: ${known.join(", ")})`);
      run.phase = "delivering";
      // P-TEL-3, P-TEL-4: no handler ran, yet the task still gets its duration point (the
      // time to refuse it, as in the other SDKs) and its process span, failed with no_handler.
      run.handlerStartedAt = performance.now();
      await this.fail(run, {
        lease_id: run.leaseId, error: `no handler registered for ${run.task.handler_name}`, retryable: false,
        code: "no_handler", details: { handler_name: run.task.handler_name, known_handlers: known },
      });
      return;
    }
    const ctx = new TaskContext(run, this.d.client, this.d.workerId, this.lose, this.d.leaseMs);
    this.d.log.line("debug", "task_started", "task started", taskFields(run.task));
    this.d.hook("onTaskStart", { task: run.task });
    let ok = false;
    let value: unknown;
    const started = performance.now();
    run.handlerStartedAt = started;
    try {
      // P-TEL-3: with telemetry the handler runs with its process span current.
      // P-SDK-29: its timers are noted, to be released should it outlive run().
      value = await run.timers.run(() => (run.tel === undefined ? handler(ctx) : run.tel.run(() => handler(ctx))));
      ok = true;
    } catch (error) {
      value = error;
    }
    run.handlerMs = performance.now() - started;
    run.handlerReturned = true;
    // P-SDK-5: the lease went away (or shutdown already failed it): no stale result.
    if (run.settled) return;
    run.phase = "delivering";
    if (!ok && value instanceof Yield) {
      await this.release(run, yieldRelease(value, run.leaseId), "yield"); // P-SDK-32
      return;
    }
    if (!ok) {
      await this.fail(run, failureReport(value, run.leaseId));
      return;
    }
    try {
      checkOutput(value);
    } catch (err) {
      // P-SDK-15: never re-sent, never sent as a completion.
      const e = err as InvalidOutputError;
      this.rejected(run, "invalid_output", e.message);
      await this.fail(run, invalidOutputReport(e, run.leaseId));
      return;
    }
    await this.complete(run, value);
  }

  private async complete(run: TaskRun, output: unknown): Promise<void> {
    this.d.handOver(run); // P-SDK-3: the next poll need not wait for this answer
    const d = await this.completions.submit(run, output);
    switch (d.kind) {
      case "sent":
        this.d.log.line("debug", "task_completed", "task completed", taskFields(run.task));
        this.finish(run, "completed");
        this.d.hook("onTaskComplete", { task: run.task, durationMs: run.handlerMs });
        return;
      case "lost":
        this.dropped(run, d.by, d.error);
        return;
      case "given_up":
      case "unsent":
        this.undeliverable(run, "complete", d.kind === "given_up" ? d.error : undefined);
        return;
      case "refused": {
        // P-SDK-15: refused on its own, so no re-send helps; the fail carries no output.
        this.rejected(run, "output_rejected", describeCause(d.error));
        await this.fail(run, outputRejectedReport(d.error, run.leaseId));
      }
    }
  }

  /**
   * Sends a failure report, bounded (P-SDK-27), re-sending through outages with backoff
   * until the lease deadline passes or `stop` fires (P-SDK-9); also used by shutdown for
   * leftovers. A report refused as a whole is re-sent once in its small form (P-SDK-27).
   */
  async fail(run: TaskRun, report: TaskFailureReport, stop?: AbortSignal): Promise<void> {
    const backoff = new Backoff(OUTAGE_INITIAL_MS, OUTAGE_MAX_MS);
    // A shutdown fail (settled already) answers to `stop`; any other to the run's own stop.
    const halt = stop ?? run.stopDelivery.signal;
    let body = boundReport(report);
    let refused: Orch8Error | undefined; // the first refusal, once the small form went out
    for (;;) {
      try {
        // `halt` also ends the client's own wait of a Retry-After (P-SDK-29: a shutdown
        // gives the report up at once, not after the server's 30 s).
        await this.d.client.failTask(run.task.id, body, { signal: halt });
        const kind = body.retryable ? "retryable" : "permanent";
        this.d.log.line("debug", "task_failed", `task failed with ${body.code} (${kind})`, { ...taskFields(run.task), code: body.code, retryable: body.retryable ?? false });
        this.finish(run, "failed", body.code ?? "");
        this.d.hook("onTaskFail", { task: run.task, code: body.code ?? "", retryable: body.retryable ?? false, durationMs: run.handlerMs });
        return;
      } catch (err) {
        this.d.error("fail", err);
        if (err instanceof LeaseLostError) return this.dropped(run, "lease_lost", err);
        if (err instanceof TaskCancelledError) return this.dropped(run, "cancelled", err);
        if (refusesContent(err)) {
          if (refused === undefined) {
            // P-SDK-27: a checkpoint over the body limit, say: store the real error without it.
            refused = err;
            body = refusedReport(body, err.status, err.code);
            this.d.log.callFailed("fail", err, "failure report", "re-sending it once without checkpoint, details replaced by report_refused", taskFields(run.task));
            continue;
          }
          this.givenUp(run, "fail", "failure report refused twice", `${describeCause(refused)}; then ${describeCause(err)}`);
          return;
        }
        const left = Date.parse(run.leaseExpiresAt) - Date.now();
        if (!isOutage(err) || left <= 0 || halt.aborted) {
          this.undeliverable(run, "fail", err);
          return;
        }
        const wait = Math.min(outageWait(err, backoff.next()), left);
        this.d.log.callFailed("fail", err, "failure report", `retrying in ${wait} ms`, { ...taskFields(run.task), retry_in_ms: wait });
        await sleep(wait, halt);
      }
    }
  }

  /**
   * Gives the task back without spending an attempt (P-SDK-32, P-SDK-33), re-sending
   * through outages until the lease deadline (P-SDK-9); any other refusal gives it up.
   */
  private async release(run: TaskRun, body: TaskRelease, reason: "yield" | "expired"): Promise<void> {
    const backoff = new Backoff(OUTAGE_INITIAL_MS, OUTAGE_MAX_MS);
    const halt = run.stopDelivery.signal;
    for (;;) {
      try {
        await this.d.client.releaseTask(run.task.id, body, { signal: halt });
        if (reason === "yield") {
          this.d.log.line("debug", "task_released", `task yielded; released (delay ${body.delay_ms} ms)`,
            { ...taskFields(run.task), reason, delay_ms: body.delay_ms ?? 0 });
        } else {
          this.d.log.line("info", "task_released", "task expired before it started; released without running",
            { ...taskFields(run.task), reason, good_until: run.task.good_until });
        }
        this.finish(run, "released");
        return;
      } catch (err) {
        this.d.error("release", err);
        if (err instanceof LeaseLostError) return this.dropped(run, "lease_lost", err);
        if (err instanceof TaskCancelledError) return this.dropped(run, "cancelled", err);
        const left = Date.parse(run.leaseExpiresAt) - Date.now();
        if (!isOutage(err) || left <= 0 || halt.aborted) {
          if (run.outcome !== undefined) return;
          const why = isOutage(err) ? "release still undeliverable at the lease deadline" : "release refused";
          this.givenUp(run, "release", why, describeCause(err));
          return;
        }
        const wait = Math.min(outageWait(err, backoff.next()), left);
        this.d.log.callFailed("release", err, "release", `retrying in ${wait} ms`, { ...taskFields(run.task), retry_in_ms: wait });
        await sleep(wait, halt);
      }
    }
  }

  /** A result that never reached the server: the task comes back after its lease (P-SDK-9). */
  private undeliverable(run: TaskRun, what: "complete" | "fail", err: unknown): void {
    if (run.outcome !== undefined) return;
    const why = err === undefined ? "its lease was lost first" : describeCause(err);
    this.givenUp(run, what, `${what === "fail" ? "failure report" : "completion"} not delivered`, why);
  }

  /** P-SDK-31 `given_up`: no result reached the server; the task counts as lease lost. */
  private givenUp(run: TaskRun, operation: "complete" | "fail" | "release", why: string, cause: string): void {
    this.d.log.line("error", "given_up", `${why}; task given up as lease lost`, { ...taskFields(run.task), operation }, cause);
    this.finish(run, "lease_lost");
  }

  /** P-SDK-31 `task_rejected`: the worker fails the task itself (P-SDK-14, P-SDK-15). */
  private rejected(run: TaskRun, code: string, cause: string): void {
    this.d.log.line("warn", "task_rejected", `task failed with ${code}`, { ...taskFields(run.task), code }, cause);
  }

  private dropped(run: TaskRun, by: "lease_lost" | "cancelled", err: Orch8Error): void {
    // A shutdown `fail` may meet a lease that is already gone: count it once, as that loss.
    if (run.settledBy === "shutdown") {
      this.finish(run, by);
      return;
    }
    this.lose(run, by, err);
    this.finish(run, by);
  }
}
