// P-SDK-22: every warning names its cause. One wording for an error in a log line.
import { Orch8Error } from "../errors.js";

/**
 * "HTTP 413 payload_too_large: <detail>", "connection_error: pollTasks (http://...): connect
 * ECONNREFUSED ...", "lease_lost: <why>" (learnt from a 2xx answer), "TypeError: ...".
 */
export function describeCause(err: unknown): string {
  if (err instanceof Orch8Error) {
    // Status 0: no HTTP refusal to name (a transport error, or news from a 2xx answer).
    if (err.status === 0) return `${err.code}: ${err.message}`;
    // Retry-After is not repeated here: the line's `retry_in_ms` says how long it waits.
    const detail = err.problem?.detail ? `: ${err.problem.detail}` : "";
    return `HTTP ${err.status} ${err.code}${detail}`;
  }
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

