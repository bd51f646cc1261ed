// What the task page shows of issue 18's telemetry: the trace id carried in the task's W3C
// `traceparent` header (P-TEL-1), and per attempt its queue wait and run time.
import type { Attempt, Task } from "./api";

// version-traceid-parentid-flags, lower-case hex (W3C Trace Context, level 1). A future
// version may append fields; version ff and an all-zero trace id are invalid.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}(-.*)?$/;

/** The trace id of the task's `traceparent` header; null when absent or not valid W3C. */
export function traceId(headers: Record<string, string> | null | undefined): string | null {
  // P-TEL-1: the key is lower-case; another spelling is not propagated by any SDK.
  const value = headers?.traceparent?.trim();
  const m = value ? TRACEPARENT.exec(value) : null;
  if (!m) return null;
  const [, version, id, rest] = m;
  if (version === "ff" || (version === "00" && rest) || /^0+$/.test(id)) return null;
  return id;
}

/** Queue wait and run time of one attempt, in ms; null where the API cannot tell. */
export interface AttemptTiming {
  waitMs: number | null;
  runMs: number | null;
}

/**
 * Queue wait = the attempt's claim (`started_at`) minus when it became claimable, the
 * later of the task's `created_at` and `run_at` (the same definition as the server's
 * P-OBS-5 history and `ClaimedTask.ready_at`). The API keeps only the task's current
 * `run_at`, which a retry moves forward, so the wait is known for the latest attempt only,
 * and only while `run_at` is not after its claim. Run time = `ended_at` - `started_at`.
 */
export function attemptTimings(task: Task, attempts: Attempt[]): Map<number, AttemptTiming> {
  const out = new Map<number, AttemptTiming>();
  const latest = attempts.reduce((n, a) => Math.max(n, a.attempt), 0);
  const ready = Math.max(Date.parse(task.created_at), Date.parse(task.run_at));
  for (const a of attempts) {
    const started = Date.parse(a.started_at);
    const ended = a.ended_at ? Date.parse(a.ended_at) : NaN;
    const known = a.attempt === latest && Number.isFinite(ready) && ready <= started;
    out.set(a.attempt, {
      waitMs: known ? started - ready : null,
      runMs: Number.isFinite(ended) ? Math.max(0, ended - started) : null,
    });
  }
  return out;
}
