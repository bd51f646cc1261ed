// The one outage classifier of P-SDK-16 and the Retry-After waits built on it. The
// client's automatic retries (P-SDK-2), the worker's poll backoff (P-SDK-9) and result
// re-sends (P-SDK-12) all ask isOutage(); nothing else decides what an outage is.
import { Orch8Error } from "./errors.js";
import * as C from "./generated/constants.js";

/** Answers that mean "the server (or the path to it) is down", not "the request is wrong". */
export const OUTAGE_STATUSES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504]);
/** A client does not retry by itself past a longer Retry-After (P-SDK-16). */
export const CLIENT_RETRY_AFTER_LIMIT_MS = C.CLIENT_RETRY_AFTER_LIMIT_MS;
/** A worker waits at most this long for a Retry-After before its next poll or re-send. */
export const WORKER_RETRY_AFTER_CAP_MS = C.WORKER_RETRY_AFTER_CAP_MS;

/** P-SDK-16: refused/reset connection, timeout (status 0), or 408, 429, 500, 502, 503, 504. */
export function isOutage(err: unknown): err is Orch8Error {
  return err instanceof Orch8Error && (err.code === "connection_error" || OUTAGE_STATUSES.has(err.status));
}

/** `ms` plus a random 0-10% of it, so clients told the same Retry-After do not return together. */
export function jitterRetryAfter(ms: number, random: () => number = Math.random): number {
  return Math.round(ms + random() * 0.1 * ms);
}

/** The worker's wait after an outage: min(Retry-After, 60 s) + 0-10% when sent, else `computed`. */
export function outageWait(err: unknown, computed: number, random: () => number = Math.random): number {
  const retryAfter = err instanceof Orch8Error ? err.retryAfterMs : undefined;
  if (retryAfter === undefined) return computed;
  return jitterRetryAfter(Math.min(retryAfter, WORKER_RETRY_AFTER_CAP_MS), random);
}
