// Typed errors mapped from the problem `code` of docs/protocol.md section 12 (P-ERR-1).
import type { FieldProblem, Problem } from "./types.js";

/** Base class of every error the client raises for a problem answer or a network failure. */
export class Orch8Error extends Error {
  /** HTTP status, or 0 when no answer arrived (connection_error). */
  readonly status: number;
  /** Stable machine code (`not_found`, `lease_lost`, ..., or `connection_error`). */
  readonly code: string;
  /** Field errors located by JSON pointer (P-ERR-2). */
  readonly errors: FieldProblem[];
  /** The problem body as received, when there was one. */
  readonly problem: Problem | undefined;
  /** Server's Retry-After in milliseconds, when it sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(
    message: string,
    init: { status: number; code: string; problem?: Problem; retryAfterMs?: number; cause?: unknown },
  ) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.problem = init.problem;
    this.errors = init.problem?.errors ?? [];
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** 400 malformed_json, 413 payload_too_large, 415 unsupported_media_type, 422 validation_error. */
export class ValidationError extends Orch8Error {}
/** 401 unauthorized (P-AUTH-1). */
export class AuthError extends Orch8Error {}
/** 403 forbidden: the key's role, tenant or scope does not allow the call (P-AUTH-3, P-SDK-24). */
export class ForbiddenError extends Orch8Error {}
/** 404 not_found. */
export class NotFoundError extends Orch8Error {}
/** 409 invalid_state: the operation does not fit the task's state. */
export class ConflictError extends Orch8Error {}
/** 409 lease_lost: the lease is no longer current (P-LEASE-3). */
export class LeaseLostError extends Orch8Error {}
/** 409 task_cancelled: the task was cancelled (P-CANCEL-2). */
export class TaskCancelledError extends Orch8Error {}
/** 429 rate_limited; honour retryAfterMs. */
export class RateLimitedError extends Orch8Error {}
/** 503 unavailable, or a network failure with code `connection_error`. */
export class UnavailableError extends Orch8Error {}

type ErrorClass = new (message: string, init: ConstructorParameters<typeof Orch8Error>[1]) => Orch8Error;

const BY_CODE: Record<string, ErrorClass> = {
  malformed_json: ValidationError,
  payload_too_large: ValidationError,
  unsupported_media_type: ValidationError,
  validation_error: ValidationError,
  unauthorized: AuthError,
  forbidden: ForbiddenError, // P-SDK-24
  not_found: NotFoundError,
  lease_lost: LeaseLostError,
  task_cancelled: TaskCancelledError,
  invalid_state: ConflictError,
  rate_limited: RateLimitedError,
  unavailable: UnavailableError,
};

// Used when a body carries no known code (a proxy's HTML page, an unknown future code).
function classForStatus(status: number): ErrorClass {
  if (status === 400 || status === 413 || status === 415 || status === 422) return ValidationError;
  if (status === 401) return AuthError;
  if (status === 403) return ForbiddenError;
  if (status === 404) return NotFoundError;
  if (status === 409) return ConflictError;
  if (status === 429) return RateLimitedError;
  if (status === 502 || status === 503 || status === 504) return UnavailableError;
  return Orch8Error;
}

function isProblem(body: unknown): body is Problem {
  return typeof body === "object" && body !== null && typeof (body as Problem).code === "string";
}

/** Builds the typed error for a non-2xx answer from its status, body and Retry-After. */
export function errorFromResponse(status: number, body: unknown, retryAfterMs?: number): Orch8Error {
  if (isProblem(body)) {
    const cls = BY_CODE[body.code] ?? classForStatus(status);
    const message = `${body.title ?? "error"} (${status} ${body.code}): ${body.detail ?? ""}`.trim();
    return new cls(message, { status, code: body.code, problem: body, retryAfterMs });
  }
  const cls = classForStatus(status);
  const text = typeof body === "string" ? body.slice(0, 200) : "";
  return new cls(`HTTP ${status}${text ? `: ${text}` : ""}`, { status, code: `http_${status}`, retryAfterMs });
}

/** A refused, reset or timed-out request (docs/protocol.md section 12: `connection_error`). */
export function connectionError(cause: unknown, what: string): UnavailableError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new UnavailableError(`${what}: ${reason}`, { status: 0, code: "connection_error", cause });
}
