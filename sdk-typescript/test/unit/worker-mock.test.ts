// Worker behaviour that needs precise control of the server's answers: outage backoff and
// result re-sending (P-SDK-9), directive transitions (P-WORKER-3). The HTTP layer is a
// routing mock; the real-server behaviour is covered by test/integration.
import { test } from "node:test";
import assert from "node:assert/strict";
import { LeaseLostError, Orch8Client, ShutdownError, ValidationError, Worker, type ErrorOperation, type Handler, type WorkerHooks } from "../../src/index.js";
import { json, problem, type Recorded } from "../helpers/mock-fetch.js";
import { batchAnswer, claimed, hangUntilAborted, item, routed, until, worker } from "../helpers/routed.js";

test("a result is re-sent through an outage until the server takes it (P-SDK-9)", async () => {
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 50, tasks: [] }),
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1 ? json(200, { tasks: [claimed("t1", 60_000)], next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
    "POST /workers/tasks/complete/batch": (_req, n) => (n <= 2 ? problem(503, "unavailable") : json(200, batchAnswer([item("t1")]))),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false, handlers: { h: () => ({ ok: 1 }) } });
  const run = w.run();
  await until(() => w.stats().tasks_completed === 1, "the completion");
  await w.stop();
  await run;
  const completes = m.calls.filter((c) => c.key === "POST /workers/tasks/complete/batch");
  assert.equal(completes.length, 3);
  for (const c of completes) assert.deepEqual(c.body, { items: [{ task_id: "t1", lease_id: "lease_t1", output: { ok: 1 } }] });
  assert.equal(m.count("DELETE /workers/w"), 1);
});

test("an undeliverable result is dropped once its lease deadline passes", async () => {
  const errors: ErrorOperation[] = [];
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    // Heartbeats fail too, so nothing extends the lease.
    "POST /workers/w/heartbeat": () => problem(503, "unavailable"),
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1 ? json(200, { tasks: [claimed("t2", 400)], next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
    "POST /workers/tasks/complete/batch": () => problem(503, "unavailable"),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false,
    handlers: { h: () => "lost" }, hooks: { onError: (e) => errors.push(e.operation) },
  });
  const run = w.run();
  await until(() => w.stats().tasks_lease_lost === 1, "the delivery to be given up (P-SDK-9: counts as lease lost)");
  assert.equal(w.stats().in_flight, 0, "the slot was freed");
  assert.equal(w.stats().tasks_completed, 0);
  assert.ok(errors.includes("complete") && errors.includes("heartbeat"), "onError names the failed operations");
  assert.ok(m.count("POST /workers/tasks/complete/batch") >= 2, "re-sent at least once before the deadline");
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

test("a rejected registration (422) fails run(); an outage at start is ridden out until stop()", async () => {
  // A refused key (401/403) is ridden out too since P-SDK-24: see tenant.test.ts.
  const denied = routed({ "POST /workers": () => problem(422, "validation_error") });
  const w1 = new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: denied.fetch }), workerId: "w", handleSignals: false, handlers: { h: () => 1 } });
  await assert.rejects(w1.run(), ValidationError);
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
  assert.equal(m.calls.filter((c) => /\/complete(\/batch)?$/.test(c.url.pathname)).length, 0, "no stale complete");
  await w.stop();
  await run;
});

test("a heartbeat's lease_lost for a task whose result is on its way does not drop it: the result's answer decides", async () => {
  let release!: () => void;
  const held = new Promise<void>((r) => { release = r; });
  let lostAnswers = 0;
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    // The server already applied our completion, so it calls the lease gone (as a real one does).
    "POST /workers/w/heartbeat": (req) => {
      const ids = (req.body as { active_task_ids: string[] }).active_task_ids;
      lostAnswers += ids.length;
      return json(200, { directive: "running", heartbeat_interval_ms: 20, tasks: ids.map((id) => ({ task_id: id, lease_expires_at: null, cancel_requested: false, lease_lost: true })) });
    },
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1 ? json(200, { tasks: [claimed("t9", 60_000)], next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
    "POST /workers/tasks/complete/batch": async () => { await held; return json(200, batchAnswer([item("t9")])); },
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }), workerId: "w", handleSignals: false, handlers: { h: () => "done" } });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/complete/batch") === 1 && lostAnswers >= 2, "heartbeats answering lease_lost while the completion is in flight");
  release();
  await until(() => w.stats().in_flight === 0, "the task to be accounted for");
  await w.stop();
  await run;
  assert.deepEqual([w.stats().tasks_completed, w.stats().tasks_lease_lost], [1, 0]);
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

// --- P-SDK-12: completions go out group-commit style through the batch endpoint ----------

const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((r) => { open = r; });
  return { open, opened };
};
const itemsOf = (c: Recorded | undefined) => (c?.body as { items: Array<{ task_id: string }> }).items;
const batchWorker = (m: ReturnType<typeof routed>, handlers: Record<string, Handler>, hooks: WorkerHooks = {}) =>
  new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false, concurrency: 10, handlers, hooks });
const basics = (tasks: string[]) => ({
  "POST /workers": () => json(200, worker("w")),
  "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 1000, tasks: [] }),
  "POST /workers/tasks/poll/batch": (req: Recorded, n: number) => (n === 1 ? json(200, { tasks: tasks.map((id) => claimed(id, 60_000)), next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
  "DELETE /workers/w": () => json(200, worker("w")),
});

test("P-SDK-12: a lone result goes out at once as a batch of one", async () => {
  let doneAt = 0;
  let sentAt = 0;
  const m = routed({
    ...basics(["b1"]),
    "POST /workers/tasks/complete/batch": (req) => { sentAt = Date.now(); return json(200, batchAnswer(itemsOf(req).map((i) => item(i.task_id)))); },
  });
  const w = batchWorker(m, { h: () => { doneAt = Date.now(); return { v: 1 }; } });
  const run = w.run();
  await until(() => w.stats().tasks_completed === 1, "the completion");
  await w.stop();
  await run;
  const batches = m.calls.filter((c) => c.key === "POST /workers/tasks/complete/batch");
  assert.equal(batches.length, 1);
  assert.deepEqual(batches[0]?.body, { items: [{ task_id: "b1", lease_id: "lease_b1", output: { v: 1 } }] });
  assert.ok(sentAt - doneAt < 100, `sent at once, not after a timer (${sentAt - doneAt} ms)`);
  assert.equal(m.calls.filter((c) => /\/tasks\/b1\/complete$/.test(c.url.pathname)).length, 0, "no single complete");
});

test("P-SDK-12: results ready in the same event-loop turn go out in one request, not one alone first", async () => {
  const m = routed({
    ...basics(["s1", "s2", "s3", "s4", "s5"]),
    "POST /workers/tasks/complete/batch": (req) => json(200, batchAnswer(itemsOf(req).map((i) => item(i.task_id)))),
  });
  const w = batchWorker(m, { h: (ctx) => ctx.task.id });
  const run = w.run();
  await until(() => w.stats().tasks_completed === 5, "the completions");
  await w.stop();
  await run;
  const batches = m.calls.filter((c) => c.key === "POST /workers/tasks/complete/batch");
  assert.deepEqual(batches.map((b) => itemsOf(b).map((i) => i.task_id)), [["s1", "s2", "s3", "s4", "s5"]]);
});

test("P-SDK-12: results finishing while a request is in flight go together in the next request", async () => {
  const first = gate(); // holds the first batch request open
  const rest = gate(); // holds the handlers of b3..b5
  let finished = 0;
  const m = routed({
    ...basics(["b2", "b3", "b4", "b5"]),
    "POST /workers/tasks/complete/batch": async (req, n) => {
      if (n === 1) await first.opened;
      return json(200, batchAnswer(itemsOf(req).map((i) => item(i.task_id))));
    },
  });
  const w = batchWorker(m, {
    h: async (ctx) => {
      if (ctx.task.id !== "b2") await rest.opened;
      finished++;
      return ctx.task.id;
    },
  });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/complete/batch") === 1 && finished === 1, "the first request to be in flight");
  rest.open();
  await until(() => finished === 4, "the other handlers");
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(m.count("POST /workers/tasks/complete/batch"), 1, "nothing sent while a request is in flight");
  first.open();
  await until(() => w.stats().tasks_completed === 4, "all completions");
  await w.stop();
  await run;
  const batches = m.calls.filter((c) => c.key === "POST /workers/tasks/complete/batch");
  assert.deepEqual(batches.map((b) => itemsOf(b).map((i) => i.task_id)), [["b2"], ["b3", "b4", "b5"]]);
});

test("P-SDK-12: an error item with lease_lost is not re-sent and counts as lease lost", async () => {
  const abandoned: string[] = [];
  const m = routed({
    ...basics(["b6"]),
    "POST /workers/tasks/complete/batch": () => json(200, batchAnswer([item("b6", "lease_lost")])),
  });
  const w = batchWorker(m, { h: () => "stale" }, { onTaskAbandoned: (e) => abandoned.push(`${e.task.id}:${e.reason}`) });
  const run = w.run();
  await until(() => w.stats().tasks_lease_lost === 1 && w.stats().in_flight === 0, "the lease loss");
  await new Promise((r) => setTimeout(r, 100));
  await w.stop();
  await run;
  assert.equal(m.count("POST /workers/tasks/complete/batch"), 1, "not re-sent");
  assert.equal(w.stats().tasks_completed, 0);
  assert.deepEqual(abandoned, ["b6:lease_lost"]);
});

test("P-SDK-12: a 503 on the batch re-sends the same items", async () => {
  const first = gate();
  const m = routed({
    ...basics(["b7", "b8"]),
    "POST /workers/tasks/complete/batch": async (req, n) => {
      if (n === 1) await first.opened;
      return n <= 2 ? problem(503, "unavailable", { "Retry-After": "0" }) : json(200, batchAnswer(itemsOf(req).map((i) => item(i.task_id))));
    },
  });
  const later = gate();
  let b8done = false;
  const w = batchWorker(m, { h: async (ctx) => { if (ctx.task.id === "b8") { await later.opened; b8done = true; } return { id: ctx.task.id }; } });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/complete/batch") === 1, "the first request");
  later.open();
  await until(() => b8done, "b8 to finish");
  await new Promise((r) => setTimeout(r, 30));
  first.open(); // answers 503: b7 goes again, with b8 that became ready meanwhile
  await until(() => w.stats().tasks_completed === 2, "both completions");
  await w.stop();
  await run;
  const batches = m.calls.filter((c) => c.key === "POST /workers/tasks/complete/batch");
  assert.equal(batches.length, 3);
  assert.deepEqual(itemsOf(batches[0]), [{ task_id: "b7", lease_id: "lease_b7", output: { id: "b7" } }]);
  assert.deepEqual(batches[1]?.body, { items: [{ task_id: "b7", lease_id: "lease_b7", output: { id: "b7" } }, { task_id: "b8", lease_id: "lease_b8", output: { id: "b8" } }] });
  assert.deepEqual(batches[2]?.body, batches[1]?.body, "the same items re-sent after the 503");
  assert.equal(w.stats().tasks_lease_lost, 0);
});
