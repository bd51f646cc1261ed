// Public surface of @orch8/sdk.
export { Orch8Client, OPERATIONS, DEFAULT_BASE_URL, DEFAULT_TIMEOUT_MS, DEFAULT_MAX_RETRIES, DEFAULT_WAIT_MS } from "./client.js";
export type { Orch8ClientOptions, CallOptions, OperationName, OperationPolicy, CallRetry } from "./client.js";
export { isOutage } from "./outage.js";
export { WaitTimeoutError, WAIT_ROUND_MS, DEFAULT_WAIT_TIMEOUT_MS, FINAL_INSTANCE_STATUSES, FINAL_TASK_STATUSES } from "./wait.js";
export type { WaitOptions } from "./wait.js";
export {
  Orch8Error, ValidationError, AuthError, ForbiddenError, NotFoundError, ConflictError, LeaseLostError,
  TaskCancelledError, RateLimitedError, UnavailableError,
} from "./errors.js";
export { SPEC_SHA256, SPEC_VERSION } from "./generated/spec.js";
export { SDK_VERSION, USER_AGENT } from "./version.js";
export type * from "./types.js";
export type { paths, components, operations } from "./generated/schema.js";
export * from "./worker/index.js";
export type { Telemetry, WorkerTelemetry, TaskTelemetry, WorkerIdentity, PollLink, EnqueuedIds } from "./telemetry.js";
