// Worker behaviour that needs precise control of the server's answers: outage backoff and
// result re-sending (P-SDK-9), directive transitions (P-WORKER-3). The HTTP layer is a
// routing mock; the real-server behaviour is covered by test/integration.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AuthError, LeaseLostError, Orch8Client, ShutdownError, Worker, type ErrorSite } from "../../src/index.js";
import { json, problem, type Recorded } from "../helpers/mock-fetch.js";

type Route = (req: Recorded, n: number) => Response | Promise<Response>;

/** A fetch that answers by "METHOD /path" and counts calls per route. */
function routed(routes: Record<string, Route>) {
  const calls: Array<Recorded & { key: string }> = [];
  const counts = new Map<string, number>();
  const fetch = async (input: Request): Promise<Response> => {
    const text = await input.text();
    const url = new URL(input.url);
    const key = `${input.method} ${url.pathname}`;
    const rec = { method: input.method, url, headers: input.headers, body: text ? JSON.parse(text) : undefined, signal: input.signal, key };
    calls.push(rec);
    const n = (counts.get(key) ?? 0) + 1;
    counts.set(key, n);
    const route = routes[key];
    if (!route) throw new Error(`unexpected ${key}`);
    return route(rec, n);
  };
  return { fetch, calls, count: (key: string) => counts.get(key) ?? 0 };
}

const worker = (workerId: string, directive = "running") => ({
  worker_id: workerId, state: "running", directive, hostname: null, pid: null, handlers: [], queues: [],
  concurrency: null, labels: {}, sdk: null, active_tasks: 0, registered_at: "2026-01-01T00:00:00.000Z",
  last_heartbeat_at: "2026-01-01T00:00:00.000Z", heartbeat_interval_ms: 50, dead_after_ms: 30000,
});

const claimed = (id: string, leaseMs: number) => ({
  id, handler_name: "h", queue_name: "default", params: {}, context: {}, headers: {}, priority: 0,
  attempt: 1, max_attempts: 3, lease: { id: `lease_${id}`, worker_id: "w", attempt: 1, expires_at: new Date(Date.now() + leaseMs).toISOString() },
  checkpoint: null, good_until: null, created_at: "2026-01-01T00:00:00.000Z",
  metadata: { attempt: 1, max_attempts: 3, created_at: "2026-01-01T00:00:00.000Z" },
});

/** A long-poll that waits until the worker aborts it. */
const hangUntilAborted: Route = (req) => new Promise<Response>((_, reject) => {
  req.signal.addEventListener("abort", () => reject(req.signal.reason), { once: true });
});

const until = async (cond: () => boolean, what: string, ms = 5000) => {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

test("a result is re-sent through an outage until the server takes it (P-SDK-9)", async () => {
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 50, tasks: [] }),
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1 ? json(200, { tasks: [claimed("t1", 60_000)], next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
    "POST /workers/tasks/t1/complete": (_req, n) => (n <= 2 ? problem(503, "unavailable") : json(200, { task_id: "t1", status: "completed", attempt: 1, attempts_left: 2, next_attempt_at: null, error_code: null })),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false, handlers: { h: () => ({ ok: 1 }) } });
  const run = w.run();
  await until(() => w.stats().tasks_completed === 1, "the completion");
  await w.stop();
  await run;
  const completes = m.calls.filter((c) => c.key === "POST /workers/tasks/t1/complete");
  assert.equal(completes.length, 3);
  for (const c of completes) assert.deepEqual(c.body, { lease_id: "lease_t1", output: { ok: 1 } });
  assert.equal(m.count("DELETE /workers/w"), 1);
});

test("an undeliverable result is dropped once its lease deadline passes", async () => {
  const errors: ErrorSite[] = [];
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    // Heartbeats fail too, so nothing extends the lease.
    "POST /workers/w/heartbeat": () => problem(503, "unavailable"),
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1 ? json(200, { tasks: [claimed("t2", 400)], next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
    "POST /workers/tasks/t2/complete": () => problem(503, "unavailable"),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false,
    handlers: { h: () => "lost" }, hooks: { onError: (e) => errors.push(e.site) },
  });
  const run = w.run();
  await until(() => errors.includes("deliver"), "the delivery to be given up");
  assert.equal(w.stats().in_flight, 0, "the slot was freed");
  assert.equal(w.stats().tasks_completed, 0);
  assert.ok(m.count("POST /workers/tasks/t2/complete") >= 2, "re-sent at least once before the deadline");
  await w.stop();
  await run;
});

test("poll failures back off and are counted, never retried by the client (P-SDK-9, P-SDK-2)", async () => {
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 1000, tasks: [] }),
    "POST /workers/tasks/poll/batch": (req, n) => (n <= 2 ? problem(503, "unavailable") : hangUntilAborted(req, n)),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }), workerId: "w", handleSignals: false, handlers: { h: () => 1 } });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/poll/batch") === 3, "the third poll", 5000);
  assert.deepEqual({ polls: w.stats().polls, poll_errors: w.stats().poll_errors }, { polls: 3, poll_errors: 2 });
  const pollTimes = m.calls.filter((c) => c.key === "POST /workers/tasks/poll/batch");
  assert.equal(pollTimes.length, 3, "polls are never retried by the client itself (P-SDK-2)");
  await w.stop();
  await run;
});

test("directives act on change: quiet stops polling, running resumes, terminate stops", async () => {
  let directive = "running";
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": () => json(200, { directive, heartbeat_interval_ms: 20, tasks: [] }),
    "POST /workers/tasks/poll/batch": hangUntilAborted,
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }), workerId: "w", handleSignals: false, handlers: { h: () => 1 } });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/poll/batch") === 1, "the first poll");
  directive = "quiet";
  await until(() => w.isQuiet, "quiet");
  const polls = m.count("POST /workers/tasks/poll/batch");
  const beats = m.count("POST /workers/w/heartbeat");
  await until(() => m.count("POST /workers/w/heartbeat") >= beats + 3, "more heartbeats while quiet");
  assert.equal(m.count("POST /workers/tasks/poll/batch"), polls, "no poll while quiet");
  const quietBeat = m.calls.filter((c) => c.key === "POST /workers/w/heartbeat").at(-1);
  assert.equal((quietBeat?.body as { state: string }).state, "quiet");
  directive = "running";
  await until(() => m.count("POST /workers/tasks/poll/batch") === polls + 1, "polling to resume");
  w.quiet(); // local quiet (SIGTSTP) is not undone by an unchanged `running` directive
  const beats2 = m.count("POST /workers/w/heartbeat");
  await until(() => m.count("POST /workers/w/heartbeat") >= beats2 + 3, "heartbeats");
  assert.equal(w.isQuiet, true);
  w.resume();
  directive = "terminate";
  await run;
  assert.equal(m.count("DELETE /workers/w"), 1);
});

test("a rejected registration (401) fails run(); an outage at start is ridden out until stop()", async () => {
  const denied = routed({ "POST /workers": () => problem(401, "unauthorized") });
  const w1 = new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: denied.fetch }), workerId: "w", handleSignals: false, handlers: { h: () => 1 } });
  await assert.rejects(w1.run(), AuthError);
  const down = routed({ "POST /workers": () => problem(503, "unavailable", { "Retry-After": "0" }) });
  const w2 = new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: down.fetch }), workerId: "w", handleSignals: false, handlers: { h: () => 1 } });
  const run = w2.run();
  await until(() => down.count("POST /workers") >= 5, "registration to be retried");
  await w2.stop();
  await run;
  assert.equal(down.calls.filter((c) => c.key !== "POST /workers").length, 0, "no poll before registration");
});

test("the worker heartbeat lists held tasks and a lease_lost answer fires the handler's signal", async () => {
  let reason: unknown;
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": (req) => {
      const ids = (req.body as { active_task_ids: string[] }).active_task_ids;
      return json(200, { directive: "running", heartbeat_interval_ms: 30, tasks: ids.map((id) => ({ task_id: id, lease_expires_at: null, cancel_requested: false, lease_lost: true })) });
    },
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1 ? json(200, { tasks: [claimed("t3", 60_000)], next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }), workerId: "w", handleSignals: false,
    handlers: { h: (ctx) => new Promise((resolve) => ctx.signal.addEventListener("abort", () => { reason = ctx.signal.reason; resolve("stale"); })) },
  });
  const run = w.run();
  await until(() => w.stats().tasks_lease_lost === 1 && w.stats().in_flight === 0, "the lease loss");
  assert.ok(reason instanceof LeaseLostError);
  const beat = m.calls.find((c) => c.key === "POST /workers/w/heartbeat" && (c.body as { active_task_ids: string[] }).active_task_ids.length > 0);
  assert.deepEqual(beat?.body, { state: "running", active_task_ids: ["t3"] });
  assert.equal(m.calls.filter((c) => c.url.pathname.endsWith("/complete")).length, 0, "no stale complete");
  await w.stop();
  await run;
});

test("a Worker needs handlers and a positive integer concurrency", () => {
  const client = new Orch8Client({ baseUrl: "http://h:1" });
  assert.throws(() => new Worker({ client, handlers: {} }), /at least one handler/);
  assert.throws(() => new Worker({ client, handlers: { h: () => 1 }, concurrency: 0 }), /concurrency/);
  assert.equal(new Worker({ client, handlers: { h: () => 1 } }).concurrency, 10);
});

test("signals: SIGTSTP/SIGCONT toggle quiet; a second SIGTERM cuts the 25 s grace period short", async () => {
  let reason: unknown;
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 1000, tasks: [] }),
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1 ? json(200, { tasks: [claimed("t4", 60_000)], next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
    "POST /workers/tasks/t4/fail": () => json(200, { task_id: "t4", status: "pending", attempt: 1, attempts_left: 2, next_attempt_at: null, error_code: "shutdown" }),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const before = process.listenerCount("SIGTERM");
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }), workerId: "w",
    handlers: { h: (ctx) => new Promise((resolve) => ctx.signal.addEventListener("abort", () => { reason = ctx.signal.reason; resolve("late"); })) },
  });
  const run = w.run();
  await until(() => w.stats().in_flight === 1, "the task to run");
  assert.equal(process.listenerCount("SIGTERM"), before + 1);
  // process.emit runs the worker's listeners without signalling the test process itself.
  process.emit("SIGTSTP");
  assert.equal(w.isQuiet, true);
  process.emit("SIGCONT");
  assert.equal(w.isQuiet, false);
  const t0 = Date.now();
  process.emit("SIGTERM");
  process.emit("SIGTERM");
  await run;
  assert.ok(Date.now() - t0 < 5000, "did not wait out the grace period");
  assert.equal(reason instanceof ShutdownError, true);
  const fail = m.calls.find((c) => c.key === "POST /workers/tasks/t4/fail");
  assert.deepEqual({ ...(fail?.body as object), error: "" }, { lease_id: "lease_t4", error: "", retryable: true, code: "shutdown" });
  assert.equal(process.listenerCount("SIGTERM"), before, "listeners removed when run() resolves");
});
