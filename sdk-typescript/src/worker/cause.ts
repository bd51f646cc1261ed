// P-SDK-22: every warning names its cause. One wording for an error in a log line.
import { AuthError, ForbiddenError, Orch8Error } from "../errors.js";

/**
 * "HTTP 413 payload_too_large: <detail>", "connection_error: pollTasks (http://...): connect
 * ECONNREFUSED ...", "lease_lost: <why>" (learnt from a 2xx answer), "TypeError: ...".
 */
export function describeCause(err: unknown): string {
  if (err instanceof Orch8Error) {
    // Status 0: no HTTP refusal to name (a transport error, or news from a 2xx answer).
    if (err.status === 0) return `${err.code}: ${err.message}`;
    const retryAfter = err.retryAfterMs !== undefined ? ` (Retry-After ${err.retryAfterMs} ms)` : "";
    const detail = err.problem?.detail ? `: ${err.problem.detail}` : "";
    return `HTTP ${err.status} ${err.code}${retryAfter}${detail}`;
  }
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

/**
 * P-SDK-24: "403 forbidden: <detail>" when the server refused the key (401/403), else
 * undefined. Not an outage, yet the worker keeps trying: the key may be fixed on the server.
 */
export function describeRefusal(err: unknown): string | undefined {
  if (!(err instanceof AuthError || err instanceof ForbiddenError)) return undefined;
  const detail = err.problem?.detail ?? err.message;
  return `${err.status} ${err.code}: ${detail}`;
}
