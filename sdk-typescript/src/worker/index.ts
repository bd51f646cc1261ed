// Public surface of the worker runtime.
export { Worker, DEFAULT_CONCURRENCY, DEFAULT_GRACE_PERIOD_MS, DEFAULT_HEARTBEAT_INTERVAL_MS } from "./worker.js";
export type { WorkerOptions } from "./worker.js";
export type { Handler } from "./executor.js";
export { TaskContext } from "./context.js";
export { RetryableError, PermanentError, ShutdownError, isRetryableStatus, errorForStatus } from "./errors.js";
export type { RetryableErrorOptions, PermanentErrorOptions } from "./errors.js";
export type { WorkerStats, WorkerHooks, ErrorSite } from "./stats.js";
