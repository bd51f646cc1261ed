// Counters, hooks and the logger of P-SDK-11 and P-SDK-22. Stat names are the protocol's,
// identical in every SDK; hook payloads are one object each, durations in float ms.
import type { ClaimedTask } from "../types.js";

/** A snapshot of the worker's counters (P-SDK-11). */
export interface WorkerStats {
  /** Tasks received from polls. */
  tasks_claimed: number;
  /** Completions the server acknowledged. */
  tasks_completed: number;
  /** Failures the server acknowledged, of any code. */
  tasks_failed: number;
  /** Tasks given up because the lease was lost (or a result was undeliverable until its lease deadline). */
  tasks_lease_lost: number;
  /** Tasks given up because they were cancelled. */
  tasks_cancelled: number;
  /** Releases the server acknowledged: yields (P-SDK-32), tasks expired before they started (P-SDK-33). */
  tasks_released: number;
  /** Tasks held now; claimed = completed + failed + lease_lost + cancelled + released + in_flight. */
  in_flight: number;
  /** Poll requests sent, failed ones included. */
  polls: number;
  /** Poll requests that failed (transport error or problem answer). */
  poll_errors: number;
}

export type Counter = Exclude<keyof WorkerStats, "in_flight">;

/** The worker's own call that failed, for `onError`. */
export type ErrorOperation = "poll" | "heartbeat" | "complete" | "fail" | "release" | "register" | "deregister";

/** @deprecated Old name of ErrorOperation. */
export type ErrorSite = ErrorOperation;

/** Callbacks for metrics and structured logs. A hook that throws is logged and ignored. */
export interface WorkerHooks {
  /** After every answered poll. */
  onPoll?(event: { claimed: number; durationMs: number }): void;
  /** Before the handler runs. */
  onTaskStart?(event: { task: ClaimedTask }): void;
  /** The server acknowledged the completion; durationMs is the handler's run time. */
  onTaskComplete?(event: { task: ClaimedTask; durationMs: number }): void;
  /** The server acknowledged the failure (handler error, `shutdown`, `no_handler`, ...). */
  onTaskFail?(event: { task: ClaimedTask; code: string; retryable: boolean; durationMs: number }): void;
  /** A task given up with no result sent. */
  onTaskAbandoned?(event: { task: ClaimedTask; reason: "lease_lost" | "cancelled" }): void;
  /** A call the worker made failed. */
  onError?(event: { operation: ErrorOperation; error: unknown }): void;
}

/** Where the worker logs (P-SDK-22); `console` fits. */
export interface Logger {
  debug(message: string, ...args: unknown[]): void;
  info(message: string, ...args: unknown[]): void;
  warn(message: string, ...args: unknown[]): void;
  error(message: string, ...args: unknown[]): void;
}

const quiet = () => {};
/** The default logger: console at warn (warnings and errors only). */
export const consoleAtWarn: Logger = {
  debug: quiet,
  info: quiet,
  warn: (message, ...args) => console.warn(message, ...args),
  error: (message, ...args) => console.error(message, ...args),
};

export function emptyStats(): Omit<WorkerStats, "in_flight"> {
  return {
    tasks_claimed: 0, tasks_completed: 0, tasks_failed: 0, tasks_lease_lost: 0,
    tasks_cancelled: 0, tasks_released: 0, polls: 0, poll_errors: 0,
  };
}
