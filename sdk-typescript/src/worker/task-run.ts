// One claimed task from claim to reported result: its lease deadline, its handler's
// cancellation signal, the rule that a task is reported at most once (P-SDK-5), and the
// rule that it is counted exactly once (P-SDK-11).
import type { TaskTelemetry } from "../telemetry.js";
import type { ClaimedTask } from "../types.js";
import { HandlerTimers } from "./handler-timers.js";

export type RunPhase = "running" | "delivering" | "done";
export type LossReason = "lease_lost" | "cancelled" | "shutdown";
/** How a claimed task left the worker; each maps to one stats counter. */
export type Outcome = "completed" | "failed" | "lease_lost" | "cancelled" | "released";

/**
 * An AbortController made on the first read of its signal. Node makes every AbortSignal
 * transferable, which cost about 15% of a no-op worker's CPU for the two each run holds;
 * most runs end without anyone reading either signal.
 */
export class LazyAbort {
  private ctl: AbortController | undefined;
  private fired = false;
  private reason: unknown;

  get signal(): AbortSignal {
    if (this.ctl === undefined) {
      this.ctl = new AbortController();
      if (this.fired) this.ctl.abort(this.reason);
    }
    return this.ctl.signal;
  }

  /** True once abort() was called, whether or not the signal was made. */
  get aborted(): boolean {
    return this.fired;
  }

  /** As AbortController.abort: the first reason sticks. */
  abort(reason?: unknown): void {
    if (this.fired) return;
    this.fired = true;
    this.reason = reason;
    this.ctl?.abort(reason);
  }
}

export class TaskRun {
  /** Fires the handler's AbortSignal (lease lost, cancelled, grace period over). */
  readonly abort = new LazyAbort();
  /** Stops the re-sending of a result (the lease went away, or the worker gave up). */
  readonly stopDelivery = new LazyAbort();
  readonly claimedAt: number;
  /**
   * P-SDK-30: the lease's length as claimed, its `expires_at` minus the moment the poll
   * answer arrived (>= 0), fixed at claim; undefined when `expires_at` is no date.
   */
  readonly leaseMs: number | undefined;
  leaseExpiresAt: string;
  phase: RunPhase = "running";
  /** P-SDK-3: its completion is with the batcher, so its slot is free (counted by the worker). */
  handed = false;
  /** Set once nothing more may be reported for this lease (P-SDK-5, P-SDK-7). */
  settledBy: LossReason | undefined;
  /** Set once the run is counted (P-SDK-11); never changes afterwards. */
  outcome: Outcome | undefined;
  /** The handler's run time in ms (float), once it returned or threw. */
  handlerMs = 0;
  /** performance.now() when the handler was called; undefined while none ran. */
  handlerStartedAt: number | undefined;
  /** True once the handler returned or threw. */
  handlerReturned = false;
  /** The handler's pending timers, released if it outlives run() (P-SDK-29). */
  readonly timers = new HandlerTimers();
  /** Its process span and metrics (P-TEL-3, P-TEL-4); undefined without telemetry. */
  tel: TaskTelemetry | undefined;
  done: Promise<void> = Promise.resolve();

  /** `receivedAt`: Date.now() when the poll answer that claimed it arrived. */
  constructor(readonly task: ClaimedTask, receivedAt: number = Date.now()) {
    this.claimedAt = receivedAt;
    this.leaseExpiresAt = task.lease.expires_at;
    const expires = Date.parse(task.lease.expires_at);
    this.leaseMs = Number.isFinite(expires) ? Math.max(0, expires - receivedAt) : undefined;
  }

  get leaseId(): string {
    return this.task.lease.id;
  }

  /** True when the lease is gone or already reported on: the result must be dropped. */
  get settled(): boolean {
    return this.settledBy !== undefined;
  }

  /**
   * Marks the run settled and fires the handler's signal with `reason`. Returns false when
   * it was already settled, so callers act on each loss once.
   */
  settle(by: LossReason, reason: Error): boolean {
    if (this.settledBy !== undefined) return false;
    this.settledBy = by;
    this.abort.abort(reason);
    this.stopDelivery.abort(reason);
    return true;
  }

  /** Records a newer lease deadline (from a worker or per-task heartbeat, P-SDK-10). */
  extendLease(expiresAt: string | null | undefined): void {
    if (expiresAt) this.leaseExpiresAt = expiresAt;
  }
}
