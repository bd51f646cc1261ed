// The SDK parity rules of docs/protocol.md section 14 (P-SDK-11, P-SDK-13 .. P-SDK-22),
// against a routing fetch mock that pins every request the worker sends.
import { test } from "node:test";
import assert from "node:assert/strict";
import { hostname } from "node:os";
import {
  LeaseLostError, Orch8Client, Worker, type Logger, type TaskContext, type WorkerHooks, type WorkerOptions,
} from "../../src/index.js";
import { json, problem, type Recorded } from "../helpers/mock-fetch.js";
import { batchAnswer, claimed, hangUntilAborted, item, routed, until, worker, type Route } from "../helpers/routed.js";

const W = "w";
const outcome = (id: string, status = "failed") => ({ task_id: id, status, attempt: 1, attempts_left: 0, next_attempt_at: null, error_code: "x" });
const base = (poll: Route, extra: Record<string, Route> = {}): Record<string, Route> => ({
  "POST /workers": () => json(200, worker(W)),
  "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 1000, tasks: [] }),
  "POST /workers/tasks/poll/batch": poll,
  "DELETE /workers/w": () => json(200, worker(W)),
  ...extra,
});
/** Answers the first poll with `tasks`, then waits until aborted. */
const once = (tasks: unknown[]): Route => (req, n) => (n === 1 ? json(200, { tasks, next_poll_after_ms: 0 }) : hangUntilAborted(req, n));
const okBatch: Route = (req) => json(200, batchAnswer((req.body as { items: Array<{ task_id: string }> }).items.map((i) => item(i.task_id))));
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const make = (m: ReturnType<typeof routed>, o: Partial<WorkerOptions> & Pick<WorkerOptions, "handlers">) =>
  new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: W, handleSignals: false, logger: silent, ...o });
const bodies = (m: ReturnType<typeof routed>, key: string) => m.calls.filter((c) => c.key === key).map((c) => c.body as Record<string, unknown>);
const invariant = (w: Worker) => {
  const s = w.stats();
  assert.equal(s.tasks_claimed, s.tasks_completed + s.tasks_failed + s.tasks_lease_lost + s.tasks_cancelled + s.in_flight, JSON.stringify(s));
};

test("P-SDK-13: concurrency 150 asks for 100, then for the 50 slots left; never more", async () => {
  const hundred = Array.from({ length: 100 }, (_, i) => claimed(`c${i}`, 60_000));
  const m = routed(base(once(hundred)));
  const w = make(m, { concurrency: 150, handlers: { h: (ctx) => new Promise((r) => ctx.signal.addEventListener("abort", r)) }, gracePeriodMs: 0 });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/poll/batch") === 2, "the second poll");
  assert.deepEqual(bodies(m, "POST /workers/tasks/poll/batch").map((b) => b.batch_size), [100, 50]);
  await w.stop();
  await run;
});

test("P-SDK-13: more than 50 handlers are polled in chunks of at most 50, in turn", async () => {
  const names = Array.from({ length: 120 }, (_, i) => `h${i}`);
  const m = routed(base((_req, n) => (n <= 4 ? json(200, { tasks: [], next_poll_after_ms: 0 }) : hangUntilAborted(_req, n))));
  const w = make(m, { handlers: Object.fromEntries(names.map((n) => [n, () => 1])) });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/poll/batch") === 5, "five polls");
  const chunks = bodies(m, "POST /workers/tasks/poll/batch").map((b) => b.handler_names as string[]);
  assert.deepEqual(chunks.map((c) => c.length), [50, 50, 20, 50, 50]);
  assert.deepEqual(chunks.slice(0, 3).flat(), names, "every handler is polled, each once per round");
  assert.deepEqual(chunks[3], chunks[0]);
  await w.stop();
  await run;
});

test("P-SDK-14: a task with no handler here fails at once, permanently, code no_handler", async () => {
  const m = routed(base(once([claimed("n1", 60_000, "resize")]), { "POST /workers/tasks/n1/fail": () => json(200, outcome("n1")) }));
  const started: string[] = [];
  const w = make(m, { handlers: { h: () => 1, other: () => 2 }, hooks: { onTaskStart: (e) => started.push(e.task.id) } });
  const run = w.run();
  await until(() => w.stats().tasks_failed === 1, "the failure");
  assert.deepEqual(bodies(m, "POST /workers/tasks/n1/fail")[0], {
    lease_id: "lease_n1", error: "no handler registered for resize", retryable: false, code: "no_handler",
    details: { handler_name: "resize", known_handlers: ["h", "other"] },
  });
  assert.deepEqual(started, [], "no handler ran");
  invariant(w);
  await w.stop();
  await run;
});

for (const [kind, value] of [["NaN", { x: Number.NaN }], ["Infinity", [Infinity]], ["a cycle", (() => { const o: Record<string, unknown> = {}; o.self = o; return o; })()], ["a BigInt", { n: 1n }], ["a Map", new Map([["a", 1]])]] as const) {
  test(`P-SDK-15: an output with ${kind} fails permanently with invalid_output and is never sent`, async () => {
    const m = routed(base(once([claimed("o1", 60_000)]), {
      "POST /workers/tasks/o1/fail": () => json(200, outcome("o1")),
      "POST /workers/tasks/complete/batch": okBatch,
    }));
    const w = make(m, { handlers: { h: () => value } });
    const run = w.run();
    await until(() => w.stats().tasks_failed === 1, "the failure");
    const fail = bodies(m, "POST /workers/tasks/o1/fail")[0]!;
    assert.equal(fail.code, "invalid_output");
    assert.equal(fail.retryable, false);
    assert.deepEqual(Object.keys(fail.details as object).sort(), ["message", "type"]);
    assert.equal(m.count("POST /workers/tasks/complete/batch"), 0);
    await w.stop();
    await run;
  });
}

test("P-SDK-15: a batch refused as a whole is split in halves; an item refused alone fails with output_rejected", async () => {
  let release!: () => void;
  const held = new Promise<void>((r) => { release = r; });
  const ids = ["b1", "x1", "x2", "big", "x3"];
  const m = routed(base(once(ids.map((id) => claimed(id, 60_000))), {
    "POST /workers/tasks/complete/batch": async (req, n) => {
      if (n === 1) await held;
      const items = (req.body as { items: Array<{ task_id: string }> }).items;
      return items.some((i) => i.task_id === "big") ? problem(413, "payload_too_large") : okBatch(req, n);
    },
    "POST /workers/tasks/big/fail": () => json(200, outcome("big")),
  }));
  let ran = 0;
  const w = make(m, { handlers: { h: async (ctx: TaskContext) => { if (ctx.id !== "b1") await until(() => m.count("POST /workers/tasks/complete/batch") === 1, "b1 in flight"); ran++; return { id: ctx.id }; } } });
  const run = w.run();
  await until(() => ran === 5, "all handlers");
  release();
  await until(() => w.stats().tasks_completed === 4 && w.stats().tasks_failed === 1, "4 completions and 1 failure");
  const batches = bodies(m, "POST /workers/tasks/complete/batch").map((b) => (b.items as Array<{ task_id: string }>).map((i) => i.task_id));
  assert.deepEqual(batches, [["b1"], ["x1", "x2", "big", "x3"], ["x1", "x2"], ["big", "x3"], ["big"], ["x3"]]);
  const fail = bodies(m, "POST /workers/tasks/big/fail")[0]!;
  assert.equal(fail.code, "output_rejected");
  assert.equal(fail.retryable, false);
  assert.deepEqual(fail.details, { status: 413, code: "payload_too_large" });
  assert.equal(fail.output, undefined);
  invariant(w);
  await w.stop();
  await run;
});

test("P-SDK-16: a poll answered 503 with Retry-After waits that long (+0-10%) before the next poll", async () => {
  const m = routed(base((req, n) => (n === 1 ? problem(503, "unavailable", { "Retry-After": "1" }) : hangUntilAborted(req, n))));
  const w = make(m, { handlers: { h: () => 1 } });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/poll/batch") === 2, "the second poll", 5000);
  const times = m.calls.filter((c) => c.key === "POST /workers/tasks/poll/batch").map((c) => c.at);
  const gap = times[1]! - times[0]!;
  assert.ok(gap >= 990 && gap < 1600, `waited ${gap} ms`);
  assert.deepEqual({ polls: w.stats().polls, poll_errors: w.stats().poll_errors }, { polls: 2, poll_errors: 1 });
  await w.stop();
  await run;
});

test("P-SDK-17: a handler deaf to its signal cannot hold the worker past the grace period; its task fails with shutdown", async () => {
  const m = routed(base(once([claimed("d1", 60_000)]), { "POST /workers/tasks/d1/fail": () => json(200, outcome("d1", "pending")) }));
  const w = make(m, { gracePeriodMs: 300, handlers: { h: () => new Promise(() => {}) } });
  const run = w.run();
  await until(() => w.stats().in_flight === 1, "the task to run");
  const t0 = Date.now();
  await w.stop();
  await run;
  assert.ok(Date.now() - t0 < 300 + 5000, `returned after ${Date.now() - t0} ms`);
  assert.equal(bodies(m, "POST /workers/tasks/d1/fail")[0]!.code, "shutdown");
  assert.equal(w.stats().tasks_failed, 1);
  assert.equal(m.count("DELETE /workers/w"), 1);
  invariant(w);
});

test("P-SDK-18: local and operator quiet are independent; each is cleared only by its own side", async () => {
  let directive = "running";
  const m = routed(base(hangUntilAborted, {
    "POST /workers/w/heartbeat": () => json(200, { directive, heartbeat_interval_ms: 20, tasks: [] }),
  }));
  const w = make(m, { handlers: { h: () => 1 } });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/poll/batch") === 1, "the first poll");
  directive = "quiet";
  await until(() => w.isQuiet, "operator quiet");
  w.resume(); // SIGCONT: clears only the local flag
  const beats = m.count("POST /workers/w/heartbeat");
  await until(() => m.count("POST /workers/w/heartbeat") >= beats + 3, "heartbeats");
  assert.equal(w.isQuiet, true, "resume() does not undo an operator's quiet");
  assert.equal(m.count("POST /workers/tasks/poll/batch"), 1);
  w.quiet(); // SIGTSTP while the operator's quiet holds
  directive = "running"; // clears only the operator flag
  const beats2 = m.count("POST /workers/w/heartbeat");
  await until(() => m.count("POST /workers/w/heartbeat") >= beats2 + 3, "heartbeats");
  assert.equal(w.isQuiet, true, "a running directive does not undo local quiet");
  assert.equal(m.count("POST /workers/tasks/poll/batch"), 1);
  w.resume();
  await until(() => m.count("POST /workers/tasks/poll/batch") === 2, "polling once both are clear");
  directive = "terminate";
  await run;
});

test("P-SDK-19: ctx.heartbeat on 409 lease_lost fires the signal and throws LeaseLostError; no result is sent", async () => {
  let thrown: unknown;
  const m = routed(base(once([claimed("l1", 60_000)]), {
    "POST /workers/tasks/l1/heartbeat": () => problem(409, "lease_lost"),
    "POST /workers/tasks/complete/batch": okBatch,
  }));
  const w = make(m, {
    leaseMs: 7000,
    handlers: {
      h: async (ctx: TaskContext) => {
        try { await ctx.heartbeat({ pct: 50 }); } catch (err) { thrown = err; }
        return { aborted: ctx.signal.aborted };
      },
    },
  });
  const run = w.run();
  await until(() => w.stats().tasks_lease_lost === 1 && w.stats().in_flight === 0, "the loss");
  assert.ok(thrown instanceof LeaseLostError);
  assert.deepEqual(bodies(m, "POST /workers/tasks/l1/heartbeat")[0], { lease_id: "lease_l1", lease_ms: 7000, progress: { pct: 50 } });
  assert.equal(m.count("POST /workers/tasks/complete/batch"), 0);
  await w.stop();
  await run;
});

test("P-SDK-21: default worker id <hostname>-<pid>-<8 hex>; registration sends the protocol's fields", async () => {
  const c = new Orch8Client({ baseUrl: "http://h:1" });
  const id = new Worker({ client: c, handlers: { h: () => 1 } }).workerId;
  assert.match(id, new RegExp(`^${hostname().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-${process.pid}-[0-9a-f]{8}$`));
  const m = routed(base(hangUntilAborted));
  const w = make(m, { concurrency: 3, handlers: { a: () => 1, b: () => 2 } });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/poll/batch") === 1, "the first poll");
  const reg = bodies(m, "POST /workers")[0]!;
  assert.deepEqual({ ...reg, pid: 0, hostname: "" }, {
    worker_id: W, hostname: "", pid: 0, handlers: ["a", "b"], queues: ["default"], concurrency: 3, labels: {}, sdk: "orch8-typescript/0.1.0",
  });
  assert.equal(reg.pid, process.pid);
  await w.stop();
  await run;
});

test("P-SDK-11: hooks get one payload each; a throwing hook is logged and ignored; counters add up", async () => {
  const events: Array<[string, unknown]> = [];
  const warnings: string[] = [];
  const logger: Logger = { ...silent, warn: (msg) => warnings.push(msg) };
  const hooks: WorkerHooks = {
    onPoll: (e) => events.push(["poll", Object.keys(e).sort()]),
    onTaskStart: (e) => { events.push(["start", Object.keys(e)]); throw new TypeError("hook bug"); },
    onTaskComplete: (e) => events.push(["complete", Object.keys(e).sort()]),
    onTaskFail: (e) => events.push(["fail", { ...e, task: e.task.id, durationMs: typeof e.durationMs }]),
    onError: (e) => events.push(["error", e.operation]),
  };
  const m = routed(base((req, n) => (n === 1 ? json(200, { tasks: [claimed("k1", 60_000), claimed("k2", 60_000)], next_poll_after_ms: 0 }) : n === 2 ? problem(503, "unavailable", { "Retry-After": "0" }) : hangUntilAborted(req, n)), {
    "POST /workers/tasks/complete/batch": okBatch,
    "POST /workers/tasks/k2/fail": () => json(200, outcome("k2")),
  }));
  const w = make(m, { logger, hooks, handlers: { h: (ctx: TaskContext) => { if (ctx.id === "k2") throw new Error("boom"); return 1; } } });
  const run = w.run();
  await until(() => w.stats().tasks_completed === 1 && w.stats().tasks_failed === 1 && m.count("POST /workers/tasks/poll/batch") >= 3, "both outcomes and the failed poll");
  await w.stop();
  await run;
  const kinds = events.map(([k]) => k);
  assert.deepEqual(events.find(([k]) => k === "poll")?.[1], ["claimed", "durationMs"]);
  assert.deepEqual(events.find(([k]) => k === "start")?.[1], ["task"]);
  assert.deepEqual(events.find(([k]) => k === "complete")?.[1], ["durationMs", "task"]);
  assert.deepEqual(events.find(([k]) => k === "fail")?.[1], { task: "k2", code: "unhandled_error", retryable: true, durationMs: "number" });
  assert.ok(kinds.includes("error"));
  assert.ok(warnings.some((w) => /hook onTaskStart threw; ignored: TypeError: hook bug$/.test(w)), warnings.join("\n"));
  // P-SDK-22: the poll failure names its cause.
  assert.ok(warnings.some((w) => /poll failed, backing off \d+ ms: HTTP 503 unavailable/.test(w)), warnings.join("\n"));
  const s = w.stats();
  assert.deepEqual([s.tasks_claimed, s.tasks_completed, s.tasks_failed, s.in_flight, s.poll_errors], [2, 1, 1, 0, 1]);
  invariant(w);
});

test("P-SDK-22: the default logger is console at warn: debug and info are silent", async () => {
  const { consoleAtWarn } = await import("../../src/index.js");
  const seen: unknown[][] = [];
  const orig = { debug: console.debug, info: console.info, warn: console.warn };
  console.debug = (...a: unknown[]) => seen.push(["debug", ...a]);
  console.info = (...a: unknown[]) => seen.push(["info", ...a]);
  console.warn = (...a: unknown[]) => seen.push(["warn", ...a]);
  try {
    consoleAtWarn.debug("d");
    consoleAtWarn.info("i");
    consoleAtWarn.warn("w");
  } finally {
    Object.assign(console, orig);
  }
  assert.deepEqual(seen, [["warn", "w"]]);
});

export type { Recorded };
