// A routing fetch mock for worker tests: answers by "METHOD /path", counts calls per route.
import type { Recorded } from "./mock-fetch.js";

export type Route = (req: Recorded, n: number) => Response | Promise<Response>;

/** A fetch that answers by "METHOD /path" and counts calls per route. */
export function routed(routes: Record<string, Route>) {
  const calls: Array<Recorded & { key: string; at: number }> = [];
  const counts = new Map<string, number>();
  const fetch = async (input: Request): Promise<Response> => {
    const at = Date.now();
    const text = await input.text();
    const url = new URL(input.url);
    const key = `${input.method} ${url.pathname}`;
    const rec = { method: input.method, url, headers: input.headers, body: text ? JSON.parse(text) : undefined, signal: input.signal, key, at };
    calls.push(rec);
    const n = (counts.get(key) ?? 0) + 1;
    counts.set(key, n);
    const route = routes[key];
    if (!route) throw new Error(`unexpected ${key}`);
    return route(rec, n);
  };
  return { fetch, calls, count: (key: string) => counts.get(key) ?? 0 };
}

export const worker = (workerId: string, directive = "running") => ({
  worker_id: workerId, state: "running", directive, hostname: null, pid: null, handlers: [], queues: [],
  concurrency: null, labels: {}, sdk: null, active_tasks: 0, registered_at: "2026-01-01T00:00:00.000Z",
  last_heartbeat_at: "2026-01-01T00:00:00.000Z", heartbeat_interval_ms: 50, dead_after_ms: 30000,
});

export const claimed = (id: string, leaseMs: number, handler = "h") => ({
  id, handler_name: handler, queue_name: "default", params: {}, context: {}, headers: {}, priority: 0,
  attempt: 1, max_attempts: 3, lease: { id: `lease_${id}`, worker_id: "w", attempt: 1, expires_at: new Date(Date.now() + leaseMs).toISOString() },
  checkpoint: null, good_until: null, created_at: "2026-01-01T00:00:00.000Z",
  metadata: { attempt: 1, max_attempts: 3, created_at: "2026-01-01T00:00:00.000Z" },
});

/** One item of a batch answer (P-BATCH-1): `completed`, or `error` with a problem code. */
export const item = (id: string, code?: string) => ({
  task_id: id, status: code ? "error" : "completed", attempt: code ? null : 1, attempts_left: code ? null : 2, next_attempt_at: null,
  problem: code ? { code, status: 409, detail: `detail of ${code}` } : null,
});
export const batchAnswer = (items: unknown[]) => ({ items });

/** A long-poll that waits until the worker aborts it. */
export const hangUntilAborted: Route = (req) => new Promise<Response>((_, reject) => {
  req.signal.addEventListener("abort", () => reject(req.signal.reason), { once: true });
});

export const until = async (cond: () => boolean, what: string, ms = 5000) => {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

