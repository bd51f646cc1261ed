// Runs one claimed task's handler and delivers its result exactly once, or not at all when
// the lease is gone (P-SDK-5, P-SDK-6, P-SDK-9).
import type { Orch8Client } from "../client.js";
import { Backoff, sleep } from "../backoff.js";
import { LeaseLostError, TaskCancelledError, ValidationError } from "../errors.js";
import type { TaskFailureReport, TaskOutcome } from "../types.js";
import { CompletionBatcher, isOutage, OUTAGE_INITIAL_MS, OUTAGE_MAX_MS } from "./batcher.js";
import { TaskContext } from "./context.js";
import { failureReport } from "./report.js";
import type { Counter, ErrorSite, WorkerHooks } from "./stats.js";
import type { LossReason, TaskRun } from "./task-run.js";

/** A handler: gets the task context, returns the task's output (any JSON value). */
export type Handler = (ctx: TaskContext) => unknown | Promise<unknown>;

export { OUTAGE_INITIAL_MS, OUTAGE_MAX_MS };

export interface ExecutorDeps {
  client: Orch8Client;
  workerId: string;
  handlers: Record<string, Handler>;
  hooks: WorkerHooks;
  count(counter: Counter): void;
  hook<K extends keyof WorkerHooks>(name: K, ...args: Parameters<NonNullable<WorkerHooks[K]>>): void;
  report(site: ErrorSite, error: unknown, taskId?: string): void;
}

export class TaskExecutor {
  /** Completions go out group-commit style through the batch endpoint (P-SDK-12). */
  private readonly completions: CompletionBatcher;

  constructor(private readonly d: ExecutorDeps) {
    this.completions = new CompletionBatcher(d.client);
  }

  /** Marks `run` lost (lease_lost / cancelled), fires its signal, counts it once. */
  lose = (run: TaskRun, by: Exclude<LossReason, "shutdown">, error: Error): void => {
    if (!run.settle(by, error)) return;
    this.d.count(by === "lease_lost" ? "tasks_lease_lost" : "tasks_cancelled");
    this.d.hook("onTaskAbandoned", { task: run.task, reason: by });
  };

  /** Runs the handler, then reports its result unless the run was settled meanwhile. */
  async execute(run: TaskRun): Promise<void> {
    const ctx = new TaskContext(run, this.d.client, this.d.workerId, this.lose);
    this.d.hook("onTaskStart", ctx);
    let ok = false;
    let value: unknown;
    try {
      const handler = this.d.handlers[run.task.handler_name];
      if (!handler) throw new Error(`no handler registered for ${run.task.handler_name}`);
      value = await handler(ctx);
      ok = true;
    } catch (error) {
      value = error;
    }
    // P-SDK-5: the lease went away (or shutdown already failed it): no stale result.
    if (run.settled) return;
    run.phase = "delivering";
    if (ok) await this.complete(run, value);
    else await this.fail(run, value, failureReport(value, run.leaseId));
  }

  private async complete(run: TaskRun, output: unknown): Promise<void> {
    try {
      const sent = await this.deliverCompletion(run, output);
      if (!sent) return;
      this.d.count("tasks_completed");
      this.d.hook("onTaskComplete", { task: run.task, output, durationMs: Date.now() - run.claimedAt });
    } catch (err) {
      // The server refused the output itself (too large, not JSON): it never will accept it.
      if (err instanceof ValidationError) {
        const report = { lease_id: run.leaseId, error: `output rejected by the server: ${err.message}`, retryable: false, code: "permanent_error" };
        await this.fail(run, err, report);
        return;
      }
      this.d.report("deliver", err, run.task.id);
    }
  }

  /** Sends a failure report; also used by shutdown for leftovers (code `shutdown`). */
  async fail(run: TaskRun, error: unknown, report: TaskFailureReport): Promise<void> {
    try {
      const sent = await this.deliver(run, () => this.d.client.failTask(run.task.id, report));
      if (!sent) return;
      this.d.count("tasks_failed");
      this.d.hook("onTaskFail", {
        task: run.task, error, code: report.code ?? "", retryable: report.retryable ?? false,
        durationMs: Date.now() - run.claimedAt,
      });
    } catch (err) {
      this.d.report("deliver", err, run.task.id);
    }
  }

  /**
   * Queues the completion for the next batch request (P-SDK-12) and handles its item's
   * answer as `deliver` handles a single call's. Resolves true when delivered, false when
   * dropped; rejects on a refusal that no retry can fix.
   */
  private async deliverCompletion(run: TaskRun, output: unknown): Promise<boolean> {
    const d = await this.completions.submit(run, output);
    switch (d.kind) {
      case "sent":
        return true;
      case "lost":
        return this.dropped(run, d.by, d.error);
      case "given_up":
        this.d.report("deliver", d.error, run.task.id);
        return false;
      case "unsent":
        return false;
      case "refused":
        throw d.error;
    }
  }

  /**
   * Sends until the server answers, re-sending through outages with backoff until the lease
   * deadline passes (P-SDK-9). Resolves true when delivered, false when dropped; rejects on
   * a refusal that no retry can fix.
   */
  private async deliver(run: TaskRun, send: () => Promise<TaskOutcome>): Promise<boolean> {
    const backoff = new Backoff(OUTAGE_INITIAL_MS, OUTAGE_MAX_MS);
    for (;;) {
      try {
        await send();
        return true;
      } catch (err) {
        if (err instanceof LeaseLostError) return this.dropped(run, "lease_lost", err);
        if (err instanceof TaskCancelledError) return this.dropped(run, "cancelled", err);
        if (!isOutage(err)) throw err;
        const left = Date.parse(run.leaseExpiresAt) - Date.now();
        if (left <= 0 || run.stopDelivery.signal.aborted) {
          this.d.report("deliver", err, run.task.id);
          return false;
        }
        await sleep(Math.min(backoff.next(), left), run.stopDelivery.signal);
      }
    }
  }

  private dropped(run: TaskRun, by: "lease_lost" | "cancelled", err: Error): false {
    // A shutdown `fail` may meet a lease that is already gone; it was settled before.
    if (run.settledBy === "shutdown") return false;
    this.lose(run, by, err);
    return false;
  }
}
