// Counters and hooks (P-SDK-11). Stat names are the protocol's, identical in every SDK.
import type { ClaimedTask } from "../types.js";
import type { TaskContext } from "./context.js";

/** A snapshot of the worker's counters. */
export interface WorkerStats {
  tasks_claimed: number;
  tasks_completed: number;
  tasks_failed: number;
  tasks_lease_lost: number;
  tasks_cancelled: number;
  /** Tasks held right now (running, or delivering their result). */
  in_flight: number;
  polls: number;
  poll_errors: number;
}

export type Counter = Exclude<keyof WorkerStats, "in_flight">;

/** Where a background error happened, for `onError`. */
export type ErrorSite = "register" | "poll" | "heartbeat" | "deliver" | "deregister" | "hook";

/** Callbacks for metrics and structured logs. A throwing hook is reported to onError, never fatal. */
export interface WorkerHooks {
  /** After every answered poll. */
  onPoll?(event: { batchSize: number; claimed: number }): void;
  /** Before the handler runs. */
  onTaskStart?(ctx: TaskContext): void;
  /** After the server accepted the result. */
  onTaskComplete?(event: { task: ClaimedTask; output: unknown; durationMs: number }): void;
  /** After the server accepted a failure (handler error, or `shutdown`). */
  onTaskFail?(event: { task: ClaimedTask; error: unknown; code: string; retryable: boolean; durationMs: number }): void;
  /** A task the worker stopped because its lease was lost or it was cancelled; nothing was reported. */
  onTaskAbandoned?(event: { task: ClaimedTask; reason: "lease_lost" | "cancelled" }): void;
  /** Background failures: polls, heartbeats, deliveries, registration. */
  onError?(event: { site: ErrorSite; error: unknown; taskId?: string }): void;
}

export function emptyStats(): Omit<WorkerStats, "in_flight"> {
  return {
    tasks_claimed: 0, tasks_completed: 0, tasks_failed: 0, tasks_lease_lost: 0,
    tasks_cancelled: 0, polls: 0, poll_errors: 0,
  };
}
