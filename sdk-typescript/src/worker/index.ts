// Public surface of the worker runtime.
export { Worker, DEFAULT_CONCURRENCY, DEFAULT_GRACE_PERIOD_MS, DEFAULT_HEARTBEAT_INTERVAL_MS } from "./worker.js";
export type { WorkerOptions } from "./worker.js";
export type { Handler } from "./executor.js";
export { TaskContext } from "./context.js";
export { RetryableError, PermanentError, ShutdownError, Yield, isRetryableStatus, errorForStatus } from "./errors.js";
export type { RetryableErrorOptions, PermanentErrorOptions, YieldOptions } from "./errors.js";
export type { WorkerStats, WorkerHooks, ErrorOperation, ErrorSite, Logger } from "./stats.js";
export { consoleAtWarn } from "./stats.js";
export { InvalidOutputError } from "./output.js";
export { MAX_POLL_BATCH, MAX_POLL_HANDLERS } from "./poller.js";
export { MAX_QUEUE_NAMES, MIN_QUEUE_WEIGHT, MAX_QUEUE_WEIGHT } from "./queues.js";
export type { WorkerHealth, HealthAddress } from "./health.js";
