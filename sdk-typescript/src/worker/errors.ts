// What a handler throws decides how its attempt ends (P-SDK-6, P-SDK-20).

export interface RetryableErrorOptions {
  /** Machine code sent with the failure; default `retryable_error`. */
  code?: string;
  /** Ask the server for exactly this delay before the next attempt (P-RETRY-4). */
  retryAfterMs?: number;
  /** Extra JSON sent as the failure's `details`. */
  details?: Record<string, unknown>;
  /** Saved and handed to the next attempt (P-CKPT-1). */
  checkpoint?: Record<string, unknown>;
  cause?: unknown;
}

/** Throw from a handler to fail the attempt retryable: the task runs again while attempts remain. */
export class RetryableError extends Error {
  readonly code: string;
  readonly retryAfterMs: number | undefined;
  readonly details: Record<string, unknown> | undefined;
  readonly checkpoint: Record<string, unknown> | undefined;

  constructor(message: string, options: RetryableErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RetryableError";
    this.code = options.code ?? "retryable_error";
    this.retryAfterMs = options.retryAfterMs;
    this.details = options.details;
    this.checkpoint = options.checkpoint;
  }
}

export interface PermanentErrorOptions {
  /** Machine code sent with the failure; default `permanent_error`. */
  code?: string;
  details?: Record<string, unknown>;
  /** Saved with the failure (P-CKPT-1, P-SDK-20), e.g. for an operator's retry. */
  checkpoint?: Record<string, unknown>;
  cause?: unknown;
}

/** Throw from a handler to fail the task permanently, skipping any remaining attempts. */
export class PermanentError extends Error {
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  readonly checkpoint: Record<string, unknown> | undefined;

  constructor(message: string, options: PermanentErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "PermanentError";
    this.code = options.code ?? "permanent_error";
    this.details = options.details;
    this.checkpoint = options.checkpoint;
  }
}

export interface YieldOptions {
  /** Stored on the task and handed to the next claim (P-CKPT-1); none keeps the stored one. */
  checkpoint?: Record<string, unknown>;
  /** Wait this long before the task is claimable again; default 0, clamped to 0..86,400,000. */
  delayMs?: number;
}

/**
 * Throw from a handler to yield: the task goes back to its queue with the checkpoint,
 * without spending an attempt, and the next claim resumes from it (P-SDK-32, seed 002).
 */
export class Yield extends Error {
  readonly checkpoint: Record<string, unknown> | undefined;
  readonly delayMs: number;

  constructor(options: YieldOptions = {}) {
    super(`task yielded (delayMs=${options.delayMs ?? 0})`);
    this.name = "Yield";
    this.checkpoint = options.checkpoint;
    this.delayMs = options.delayMs ?? 0;
  }
}

/** The reason a handler's signal fires when the grace period of a shutdown runs out (P-SDK-7). */
export class ShutdownError extends Error {
  readonly code = "shutdown";
  constructor(message = "worker is shutting down") {
    super(message);
    this.name = "ShutdownError";
  }
}

/**
 * The HTTP status classifier of P-SDK-6: 408, 429 and 5xx are worth retrying, any other
 * 4xx is not. For handlers that call other HTTP services.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/** Turns a failed HTTP status of a downstream call into a RetryableError or PermanentError. */
export function errorForStatus(status: number, message?: string): RetryableError | PermanentError {
  const text = message ?? `HTTP ${status}`;
  return isRetryableStatus(status)
    ? new RetryableError(text, { details: { http_status: status } })
    : new PermanentError(text, { details: { http_status: status } });
}
