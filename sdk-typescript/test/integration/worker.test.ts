// The Worker runtime against the real reference server: results, failures, leases,
// cancellation and the concurrency limit (docs/protocol.md section 14).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import {
  LeaseLostError, PermanentError, RetryableError, TaskCancelledError, type Orch8Client, type TaskContext,
} from "../../src/index.js";
import { TestServer, waitFor } from "../helpers/server.js";
import { aborted, startWorker, work } from "../helpers/workers.js";

let server: TestServer;
let client: Orch8Client;

before(async () => {
  server = await TestServer.start();
  client = server.client();
});
after(async () => server?.dispose());

const finished = (id: string, status = "completed") =>
  waitFor(async () => {
    const t = await client.getTask(id);
    return t.status === status ? t : undefined;
  }, `task ${id} to be ${status}`);

test("happy path: the worker completes an enqueued task; stats and hooks report it", async () => {
  const events: string[] = [];
  const w = startWorker(server, {
    handlers: { wk_echo: (ctx: TaskContext) => ({ echoed: ctx.params, attempt: ctx.attempt, handler: ctx.handlerName }) },
    hooks: {
      onPoll: () => events.includes("poll") || events.push("poll"),
      onTaskStart: () => events.push("start"),
      onTaskComplete: () => events.push("complete"),
    },
  });
  try {
    const t = await client.enqueue({ handler_name: "wk_echo", params: { n: 7 } });
    const done = await finished(t.id);
    assert.deepEqual(done.output, { echoed: { n: 7 }, attempt: 1, handler: "wk_echo" });
    assert.equal(done.worker_id, w.worker.workerId);
    await waitFor(() => w.worker.stats().tasks_completed === 1, "stats to count the completion");
    const s = w.worker.stats();
    assert.equal(s.tasks_claimed, 1);
    assert.equal(s.in_flight, 0);
    assert.ok(s.polls >= 1);
    assert.deepEqual(events, ["poll", "start", "complete"]);
    // P-SDK-12: a lone result goes out at once as a batch of one.
    const complete = w.calls.find((c) => c.path === "/workers/tasks/complete/batch");
    const items = (complete?.body as { items: Array<{ lease_id: string }> }).items;
    assert.deepEqual(complete?.body, { items: [{ task_id: done.id, lease_id: items[0]?.lease_id, output: done.output }] });
  } finally {
    await w.close();
  }
});

test("retryable failure then success: attempt 2 completes; plain errors are unhandled_error", async () => {
  const w = startWorker(server, {
    handlers: {
      wk_flaky: (ctx: TaskContext) => {
        if (ctx.attempt === 1) throw new RetryableError("upstream timed out", { retryAfterMs: 0 });
        return { ok: ctx.attempt };
      },
      wk_buggy: (ctx: TaskContext) => {
        if (ctx.attempt === 1) throw new TypeError("cannot read x of undefined");
        return "fixed";
      },
    },
  });
  try {
    const flaky = await client.enqueue({ handler_name: "wk_flaky" });
    const buggy = await client.enqueue({ handler_name: "wk_buggy", retry: { initial_backoff_ms: 0 } });
    const f = await finished(flaky.id);
    assert.equal(f.attempt, 2);
    assert.deepEqual(f.output, { ok: 2 });
    const fa = await client.listTaskAttempts(flaky.id);
    assert.deepEqual(fa.attempts.map((a) => [a.outcome, a.error?.code ?? null]), [["failed", "retryable_error"], ["completed", null]]);
    const b = await finished(buggy.id);
    assert.equal(b.output, "fixed");
    const ba = await client.listTaskAttempts(buggy.id);
    assert.equal(ba.attempts[0]!.error?.code, "unhandled_error");
    assert.equal(ba.attempts[0]!.error?.retryable, true);
    assert.equal(ba.attempts[0]!.error?.message, "cannot read x of undefined");
  } finally {
    await w.close();
  }
});

test("permanent failure: status failed after 1 attempt with code permanent_error", async () => {
  const w = startWorker(server, {
    handlers: { wk_bad: () => { throw new PermanentError("invalid image", { details: { field: "url" } }); } },
  });
  try {
    const t = await client.enqueue({ handler_name: "wk_bad" });
    const failed = await finished(t.id, "failed");
    assert.equal(failed.attempt, 1);
    assert.equal(failed.error?.code, "permanent_error");
    assert.equal(failed.error?.retryable, false);
    assert.equal(failed.error?.message, "invalid image");
    await waitFor(() => w.worker.stats().tasks_failed === 1, "tasks_failed to be 1");
  } finally {
    await w.close();
  }
});

test("a handler that outlives lease_ms keeps its lease through worker heartbeats", async () => {
  let leaseAtStart = 0;
  let leaseAtEnd = 0;
  const w = startWorker(server, {
    handlers: {
      wk_long: async (ctx: TaskContext) => {
        leaseAtStart = ctx.leaseExpiresAt.getTime();
        await work(3500); // server lease is 2000 ms
        leaseAtEnd = ctx.leaseExpiresAt.getTime();
        return { survived: !ctx.signal.aborted };
      },
    },
  });
  try {
    const t = await client.enqueue({ handler_name: "wk_long" });
    const done = await finished(t.id);
    assert.deepEqual(done.output, { survived: true });
    assert.equal(done.attempt, 1, "never reaped");
    assert.ok(leaseAtEnd - leaseAtStart >= 3000, `lease deadline moved by ${leaseAtEnd - leaseAtStart} ms`);
    const heartbeats = w.calls.filter((c) => c.path.endsWith("/heartbeat") && c.path.startsWith("/workers/ts-it"));
    assert.ok(heartbeats.length >= 5, `${heartbeats.length} worker heartbeats`);
  } finally {
    await w.close();
  }
});

test("lease loss: the handler's signal fires and no stale result is sent", async () => {
  let reason: unknown;
  let started = false;
  // Tiny lease, worker heartbeats far apart: the server reaps the lease and a second
  // worker claims the task before this worker's next heartbeat reports lease_lost.
  const w = startWorker(server, {
    concurrency: 1,
    leaseMs: 400,
    heartbeatIntervalMs: 1500,
    handlers: {
      wk_lost: async (ctx: TaskContext) => {
        started = true;
        reason = await aborted(ctx.signal);
        return "stale result";
      },
    },
  });
  try {
    const t = await client.enqueue({ handler_name: "wk_lost" });
    await waitFor(() => started, "the worker to claim the task first");
    const second = await client.pollTask({ handler_names: ["wk_lost"], worker_id: "thief", wait_ms: 5000 });
    assert.ok(second, "the reaped task was claimed again");
    assert.equal(second.attempt, 2);
    await waitFor(() => reason !== undefined, "the handler to see its signal fire");
    assert.ok(reason instanceof LeaseLostError, String(reason));
    await waitFor(() => w.worker.stats().in_flight === 0, "the worker to drop the task");
    assert.equal(w.worker.stats().tasks_lease_lost, 1);
    assert.equal(w.calls.filter((c) => /\/(complete|fail)(\/batch)?$/.test(c.path)).length, 0, "no complete or fail was sent");
    await client.completeTask(second.id, { lease_id: second.lease.id, output: "from the thief" });
    const done = await finished(t.id);
    assert.equal(done.output, "from the thief");
    const attempts = await client.listTaskAttempts(t.id);
    assert.deepEqual(attempts.attempts.map((a) => a.outcome), ["lease_expired", "completed"]);
  } finally {
    await w.close();
  }
});

test("operator cancel of a running task reaches the handler; nothing is reported", async () => {
  let started = false;
  let reason: unknown;
  const w = startWorker(server, {
    handlers: {
      wk_cancel: async (ctx: TaskContext) => {
        started = true;
        reason = await aborted(ctx.signal);
        throw new Error("stopped");
      },
    },
  });
  try {
    const t = await client.enqueue({ handler_name: "wk_cancel" });
    await waitFor(() => started, "the handler to start");
    await client.cancelTask(t.id, { reason: "operator" });
    await waitFor(() => reason !== undefined, "the cancellation to reach the handler");
    assert.ok(reason instanceof TaskCancelledError, String(reason));
    await waitFor(() => w.worker.stats().tasks_cancelled === 1, "tasks_cancelled to be 1");
    assert.equal(w.calls.filter((c) => /\/(complete|fail)(\/batch)?$/.test(c.path)).length, 0);
    const got = await client.getTask(t.id);
    assert.equal(got.status, "cancelled");
    assert.equal(got.error, null);
  } finally {
    await w.close();
  }
});

test("ctx.heartbeat saves progress and a checkpoint that the next attempt receives", async () => {
  const seen: Array<Record<string, unknown> | null> = [];
  const w = startWorker(server, {
    handlers: {
      wk_ckpt: async (ctx: TaskContext) => {
        seen.push(ctx.checkpoint);
        if (ctx.attempt === 1) {
          const status = await ctx.heartbeat({ percent: 50 }, { cursor: 500 });
          assert.equal(status.cancel_requested, false);
          throw new RetryableError("crashed half way", { retryAfterMs: 0 });
        }
        return { resumed_from: ctx.checkpoint };
      },
    },
  });
  try {
    const t = await client.enqueue({ handler_name: "wk_ckpt" });
    const done = await finished(t.id);
    assert.deepEqual(done.output, { resumed_from: { cursor: 500 } });
    assert.deepEqual(seen, [null, { cursor: 500 }]);
    assert.deepEqual(done.progress, { percent: 50 });
  } finally {
    await w.close();
  }
});

test("concurrency is never exceeded and polls ask for exactly the free slots", async () => {
  let running = 0;
  let maxRunning = 0;
  const w = startWorker(server, {
    concurrency: 3,
    handlers: {
      wk_par: async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await work(150);
        running--;
        return null;
      },
    },
  });
  try {
    const tasks = await client.enqueueBatch(Array.from({ length: 12 }, (_, i) => ({ handler_name: "wk_par", params: { i } })));
    for (const t of tasks) await finished(t.id);
    assert.equal(maxRunning, 3, "reached but never exceeded the limit");
    const polls = w.calls.filter((c) => c.path === "/workers/tasks/poll/batch").map((c) => (c.body as { batch_size: number }).batch_size);
    assert.ok(polls.every((n) => n >= 1 && n <= 3), `batch sizes ${polls.join(",")}`);
    // The server shows a task completed once it stored the result; the worker counts it
    // once the answer is back (a fresh-clone run read 11 of 12 in between).
    await waitFor(() => w.worker.stats().tasks_completed === 12, "stats to count the 12 completions");
  } finally {
    await w.close();
  }
});

test("an operator completing a running task by hand takes the lease away from the worker (P-MANUAL-1)", async () => {
  let started = false;
  let reason: unknown;
  const w = startWorker(server, {
    handlers: {
      wk_manual: async (ctx: TaskContext) => {
        started = true;
        reason = await aborted(ctx.signal);
        return "stale";
      },
    },
  });
  try {
    const t = await client.enqueue({ handler_name: "wk_manual" });
    await waitFor(() => started, "the handler to start");
    const resolved = await client.completeTaskManually(t.id, { output: { approved: true }, reason: "by hand" });
    assert.equal(resolved.status, "completed");
    await waitFor(() => reason !== undefined, "the handler to see its lease go");
    assert.ok(reason instanceof LeaseLostError, String(reason));
    await waitFor(() => w.worker.stats().in_flight === 0, "the worker to drop the task");
    assert.equal(w.calls.filter((c) => /\/(complete|fail)(\/batch)?$/.test(c.path)).length, 0, "no stale result was sent");
    assert.deepEqual((await client.getTask(t.id)).output, { approved: true });
  } finally {
    await w.close();
  }
});
