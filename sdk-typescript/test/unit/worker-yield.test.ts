// P-SDK-32: a handler yields its task with a checkpoint (released, no attempt spent);
// P-SDK-33: a task whose good_until passed before its handler started is released unrun.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Orch8Client, Worker, Yield, type Handler } from "../../src/index.js";
import { TestTask } from "../../src/testing/index.js";
import { yieldRelease } from "../../src/worker/report.js";
import { json } from "../helpers/mock-fetch.js";
import { batchAnswer, claimed, hangUntilAborted, item, routed, until, worker } from "../helpers/routed.js";

const outcome = (id: string) => ({ task_id: id, status: "pending", attempt: 0, attempts_left: 3, next_attempt_at: null, error_code: null });

/** A worker given `tasks` in its first poll; every release and completion answered 200. */
async function runWith(tasks: unknown[], handlers: Record<string, Handler>, done: (w: Worker) => boolean, concurrency = 4) {
  const releaseRoutes = Object.fromEntries((tasks as Array<{ id: string }>).map((t) =>
    [`POST /workers/tasks/${t.id}/release`, () => json(200, outcome(t.id))]));
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 50, tasks: [] }),
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1 ? json(200, { tasks, next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
    "POST /workers/tasks/complete/batch": (req) => json(200, batchAnswer((req.body as { items: Array<{ task_id: string }> }).items.map((i) => item(i.task_id)))),
    "DELETE /workers/w": () => json(200, worker("w")),
    ...releaseRoutes,
  });
  const started: string[] = [];
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false, concurrency, handlers,
    hooks: { onTaskStart: ({ task }) => started.push(task.id) },
  });
  const run = w.run();
  try {
    await until(() => done(w), "the tasks to be settled");
  } finally {
    await w.stop();
    await run;
  }
  const releases = m.calls.filter((c) => c.key.endsWith("/release")).map((c) => ({ path: c.url.pathname, body: c.body }));
  return { w, m, releases, started };
}

test("P-SDK-32: a Yield releases the task with the claim's lease, its checkpoint and delay; nothing fails", async () => {
  const { w, m, releases } = await runWith([claimed("t1", 60_000)], {
    h: () => { throw new Yield({ checkpoint: { cursor: 1000 }, delayMs: 250 }); },
  }, (w) => w.stats().tasks_released === 1);
  assert.deepEqual(releases, [{ path: "/workers/tasks/t1/release", body: { lease_id: "lease_t1", delay_ms: 250, checkpoint: { cursor: 1000 } } }]);
  assert.equal(m.calls.filter((c) => c.key.endsWith("/fail")).length, 0);
  const s = w.stats();
  assert.deepEqual([s.tasks_claimed, s.tasks_released, s.tasks_failed, s.in_flight], [1, 1, 0, 0]);
});

test("P-SDK-32: a yield's delay is clamped to 0..86,400,000; no checkpoint keeps the stored one", () => {
  assert.deepEqual(yieldRelease(new Yield({ delayMs: -5 }), "l"), { lease_id: "l", delay_ms: 0 });
  assert.deepEqual(yieldRelease(new Yield({ delayMs: 1e12 }), "l"), { lease_id: "l", delay_ms: 86_400_000 });
  assert.deepEqual(yieldRelease(new Yield(), "l"), { lease_id: "l", delay_ms: 0 });
});

test("P-SDK-33: a task past its good_until is released without running, no onTaskStart", async () => {
  const late = { ...claimed("late", 60_000), good_until: new Date(Date.now() - 1000).toISOString() };
  const fine = { ...claimed("fine", 60_000), good_until: new Date(Date.now() + 3_600_000).toISOString() };
  const ran: string[] = [];
  const { releases, started } = await runWith([late, fine], { h: (ctx) => { ran.push(ctx.id); return "ok"; } },
    (w) => w.stats().tasks_released === 1 && w.stats().tasks_completed === 1);
  assert.deepEqual(ran, ["fine"]);
  assert.deepEqual(started, ["fine"]);
  assert.deepEqual(releases, [{ path: "/workers/tasks/late/release", body: { lease_id: "lease_late", delay_ms: 0 } }]);
});

test("P-SDK-33: a task that expires behind a handler keeping the event loop busy never runs", async () => {
  const deadline = Date.now() + 150;
  const second = { ...claimed("second", 60_000), good_until: new Date(deadline).toISOString() };
  const ran: string[] = [];
  const { releases } = await runWith([claimed("first", 60_000), second], {
    h: (ctx) => {
      ran.push(ctx.id);
      // A synchronous handler: nothing else runs on the loop until it returns.
      while (ctx.id === "first" && Date.now() <= deadline) { /* busy */ }
      return "ok";
    },
  }, (w) => w.stats().tasks_released === 1 && w.stats().tasks_completed === 1, 2);
  assert.deepEqual(ran, ["first"]);
  assert.deepEqual(releases, [{ path: "/workers/tasks/second/release", body: { lease_id: "lease_second", delay_ms: 0 } }]);
});

test("P-KIT-5: the kit reports a yield as released with its checkpoint and delay", async () => {
  const out = await new TestTask().run(() => { throw new Yield({ checkpoint: { page: 3 }, delayMs: 50 }); });
  assert.equal(out.status, "released");
  assert.deepEqual(out.checkpoint, { page: 3 });
  assert.equal(out.delayMs, 50);
  assert.equal(out.code, null);
});
