// Typed errors mapped from the problem `code` of docs/protocol.md section 12 (P-ERR-1).
import type { FieldProblem, Problem } from "./types.js";

/** Base class of every error the client raises for a problem answer or a network failure. */
export class Orch8Error extends Error {
  /**
   * HTTP status of the refusal, or 0 when there is none: no answer arrived
   * (connection_error), or the loss was learnt from a 2xx answer such as a worker heartbeat.
   */
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

/**
 * 400 malformed_json, payload_too_deep, unsupported_value; 413 payload_too_large;
 * 415 unsupported_media_type; 422 validation_error; 431 headers_too_large.
 */
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
/** 503 unavailable, 408 request_timeout, or a network failure with code `connection_error`. */
export class UnavailableError extends Orch8Error {}

type ErrorClass = new (message: string, init: ConstructorParameters<typeof Orch8Error>[1]) => Orch8Error;

const BY_CODE: Record<string, ErrorClass> = {
  malformed_json: ValidationError,
  payload_too_deep: ValidationError, // P-ERR-5
  unsupported_value: ValidationError, // P-ERR-5
  headers_too_large: ValidationError, // P-HTTP-1
  payload_too_large: ValidationError,
  unsupported_media_type: ValidationError,
  validation_error: ValidationError,
  unauthorized: AuthError,
  forbidden: ForbiddenError, // P-SDK-24
  not_found: NotFoundError,
  lease_lost: LeaseLostError,
  task_cancelled: TaskCancelledError,
  invalid_state: ConflictError,
  clock_not_controllable: ConflictError, // P-CLOCK-1
  rate_limited: RateLimitedError,
  unavailable: UnavailableError,
  request_timeout: UnavailableError, // P-HTTP-2: an outage (P-SDK-16)
};

// Used when a body carries no known code (a proxy's HTML page, an unknown future code).
function classForStatus(status: number): ErrorClass {
  if (status === 400 || status === 413 || status === 415 || status === 422 || status === 431) return ValidationError;
  if (status === 401) return AuthError;
  if (status === 403) return ForbiddenError;
  if (status === 404) return NotFoundError;
  if (status === 409) return ConflictError;
  if (status === 429) return RateLimitedError;
  if (status === 408 || status === 502 || status === 503 || status === 504) return UnavailableError;
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

/**
 * The innermost cause of a transport error (P-SDK-22): fetch wraps the socket's error
 * ("fetch failed" -> "connect ECONNREFUSED ..."), and happy eyeballs may wrap several.
 */
export function innermostCause(err: unknown): unknown {
  let e = err;
  for (let depth = 0; depth < 10; depth++) {
    if (e instanceof AggregateError && e.errors.length > 0) e = e.errors[0];
    else if (e instanceof Error && e.cause !== undefined && e.cause !== null) e = e.cause;
    else break;
  }
  return e;
}

/** "connect ECONNREFUSED 127.0.0.1:1 (ECONNREFUSED)": the innermost cause's text and code. */
export function describeTransportCause(err: unknown): string {
  const inner = innermostCause(err);
  // The wrapper's code, when only it has one (Node sets it on an AggregateError).
  const code = (inner as { code?: unknown })?.code ?? (err as { code?: unknown })?.code;
  const text = inner instanceof Error ? inner.message || inner.name : String(inner);
  return typeof code === "string" && code !== "" && !text.includes(code) ? `${text} (${code})` : text;
}

/**
 * A refused, reset or timed-out request (docs/protocol.md section 12: `connection_error`).
 * P-SDK-22: the message names the server and the innermost cause, not "fetch failed".
 */
export function connectionError(cause: unknown, what: string, url?: string): UnavailableError {
  const where = url === undefined ? "" : ` (${url})`;
  return new UnavailableError(`${what}${where}: ${describeTransportCause(cause)}`, { status: 0, code: "connection_error", cause });
}
