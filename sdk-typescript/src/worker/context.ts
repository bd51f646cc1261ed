// The task context a handler receives (P-SDK-10).
import type { Orch8Client } from "../client.js";
import { LeaseLostError, TaskCancelledError } from "../errors.js";
import type { ClaimedTask, TaskHeartbeat, TaskLeaseStatus } from "../types.js";
import type { LossReason, TaskRun } from "./task-run.js";

/** Called when a per-task heartbeat learns the task is gone. */
export type LossListener = (run: TaskRun, by: Exclude<LossReason, "shutdown">, error: Error) => void;

/** Everything a handler knows about its task, plus heartbeat() and the cancellation signal. */
export class TaskContext {
  readonly id: string;
  readonly handlerName: string;
  readonly queueName: string;
  readonly params: Record<string, unknown>;
  readonly context: Record<string, unknown>;
  readonly headers: Record<string, string>;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly leaseId: string;
  readonly workerId: string;
  /** Checkpoint saved by an earlier attempt, or null (P-CKPT-1). */
  readonly checkpoint: Record<string, unknown> | null;
  /** The task exactly as the server sent it. */
  readonly task: ClaimedTask;
  /**
   * Fires when the worker must stop this task: lease lost, task cancelled, or the grace
   * period of a shutdown ran out. `signal.reason` says which (LeaseLostError,
   * TaskCancelledError, ShutdownError). Whatever the handler returns afterwards is dropped.
   */
  get signal(): AbortSignal {
    return this.run.abort.signal;
  }

  constructor(
    private readonly run: TaskRun,
    private readonly client: Pick<Orch8Client, "heartbeatTask">, // the test kit answers it too
    workerId: string,
    private readonly onLoss: LossListener,
    private readonly leaseMs?: number,
  ) {
    const t = run.task;
    this.task = t;
    this.id = t.id;
    this.handlerName = t.handler_name;
    this.queueName = t.queue_name;
    this.params = t.params;
    this.context = t.context;
    this.headers = t.headers;
    this.attempt = t.attempt;
    this.maxAttempts = t.max_attempts;
    this.leaseId = t.lease.id;
    this.checkpoint = t.checkpoint;
    this.workerId = workerId;
  }

  /** When the lease runs out unless extended; kept current by heartbeats. */
  get leaseExpiresAt(): Date {
    return new Date(this.run.leaseExpiresAt);
  }

  /** True once the signal has fired. */
  get cancelled(): boolean {
    return this.run.abort.aborted;
  }

  /**
   * Extends this task's lease now, optionally saving progress and a checkpoint for later
   * attempts (P-LEASE-5, P-CKPT-1). P-SDK-19: rejects with LeaseLostError /
   * TaskCancelledError (and fires the signal) when the task is no longer this worker's;
   * outages are retried by the client (P-SDK-2), then reject with the client's error.
   */
  async heartbeat(progress?: unknown, checkpoint?: Record<string, unknown>): Promise<TaskLeaseStatus> {
    const body: TaskHeartbeat = { lease_id: this.leaseId };
    if (this.leaseMs !== undefined) body.lease_ms = this.leaseMs; // never the deprecated extend_ms
    if (progress !== undefined) body.progress = progress;
    if (checkpoint !== undefined) body.checkpoint = checkpoint;
    try {
      const status = await this.client.heartbeatTask(this.id, body);
      this.run.extendLease(status.lease_expires_at);
      // Deprecated and always false since spec 1.1 (a 409 says it); still honoured if sent.
      // P-SDK-22: a 200 answer, so the error carries no HTTP status.
      if (status.cancel_requested) {
        this.onLoss(this.run, "cancelled", new TaskCancelledError(`the task heartbeat says task ${this.id} was cancelled`, { status: 0, code: "task_cancelled" }));
      }
      return status;
    } catch (err) {
      // P-SDK-5: a 409 on any call for the task fires the handler's signal.
      if (err instanceof LeaseLostError) this.onLoss(this.run, "lease_lost", err);
      if (err instanceof TaskCancelledError) this.onLoss(this.run, "cancelled", err);
      throw err;
    }
  }
}
