// Issue 20 against the real reference server: a Worker over several queues (P-SDK-23) in
// strict order (P-QUEUE-2) and by weight (P-QUEUE-3), label routing from the worker's
// registration (P-LABEL-1), and the operator's queue controls (P-CTRL-1..3, P-OBS-5).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import type { NewTask, Orch8Client, TaskContext } from "../../src/index.js";
import { SDK_DIR, TestServer, waitFor } from "../helpers/server.js";
import { startWorker } from "../helpers/workers.js";

let server: TestServer;
let client: Orch8Client;

before(async () => {
  server = await TestServer.start();
  client = server.client();
});
after(async () => server?.dispose());

/** Enqueues `n` tasks of `handler` on `queue`, 100 per request; returns their ids. */
async function enqueueMany(handler: string, queue: string, n: number, extra: Partial<NewTask> = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 100) {
    const batch = Array.from({ length: Math.min(100, n - i) }, (_, j) => ({ handler_name: handler, queue_name: queue, params: { i: i + j }, ...extra }));
    ids.push(...(await client.enqueueBatch(batch)).map((t) => t.id));
  }
  return ids;
}

test("P-SDK-23, P-QUEUE-2: a strict list [high, low] with concurrency 1 runs all of high before any of low", async () => {
  // low is enqueued first, so FIFO alone would run it first.
  const low = await enqueueMany("iq_strict", "low", 5);
  const high = await enqueueMany("iq_strict", "high", 5);
  const queueOf = new Map([...low.map((id) => [id, "low"] as const), ...high.map((id) => [id, "high"] as const)]);
  const order: Array<{ id: string; queue: string }> = [];
  const w = startWorker(server, {
    concurrency: 1,
    queueNames: ["high", "low"],
    handlers: { iq_strict: (ctx: TaskContext) => { order.push({ id: ctx.id, queue: ctx.queueName }); return ctx.queueName; } },
  });
  try {
    await waitFor(() => w.worker.stats().tasks_completed === 10, "the 10 tasks to complete", 30_000);
    assert.deepEqual(order.map((o) => o.queue), [...Array(5).fill("high"), ...Array(5).fill("low")]);
    for (const o of order) assert.equal(o.queue, queueOf.get(o.id), `ctx.queueName of ${o.id} is its own queue`);
    const registration = w.calls.find((c) => c.method === "POST" && c.path === "/workers");
    assert.deepEqual((registration?.body as { queues: string[] }).queues, ["high", "low"]);
    const polls = w.calls.filter((c) => c.path === "/workers/tasks/poll/batch");
    assert.ok(polls.length >= 10);
    for (const p of polls) assert.deepEqual((p.body as { queue_names: string[] }).queue_names, ["high", "low"]);
  } finally {
    await w.close();
  }
});

test("P-SDK-23, P-QUEUE-3: weights {a: 3, b: 1} give a about 3/4 of the first 400 claims", async () => {
  await enqueueMany("iq_weighted", "wa", 500);
  await enqueueMany("iq_weighted", "wb", 500);
  const order: string[] = [];
  const w = startWorker(server, {
    concurrency: 1,
    queueNames: ["wa", "wb"],
    queueWeights: { wa: 3, wb: 1 },
    handlers: { iq_weighted: (ctx: TaskContext) => { order.push(ctx.queueName); return null; } },
  });
  try {
    await waitFor(() => order.length >= 400, "400 completions", 60_000);
  } finally {
    await w.close();
  }
  const first = order.slice(0, 400);
  const share = first.filter((q) => q === "wa").length / first.length;
  // Binomial(400, 0.75): sd 0.022, so +-0.12 is 5.5 sd (with 100 draws it was 2.8 sd, a
  // false failure in about 1 run of 200); a strict or FIFO order gives 1.0 or 0.5.
  assert.ok(Math.abs(share - 0.75) <= 0.12, `share of wa among the first 400 claims is ${share}`);
  assert.ok(first.every((q) => q === "wa" || q === "wb"));
});

test("P-LABEL-1: a task's required_labels go to the worker that registered those labels", async () => {
  const [id] = await enqueueMany("iq_labelled", "default", 1, { required_labels: { gpu: "a100" } });
  const w = startWorker(server, {
    labels: { gpu: "a100", zone: "eu" },
    handlers: { iq_labelled: (ctx: TaskContext) => ({ by: ctx.workerId }) },
  });
  try {
    const done = await waitFor(async () => {
      const t = await client.getTask(id!);
      return t.status === "completed" ? t : undefined;
    }, "the labelled task to complete", 20_000);
    assert.deepEqual(done.required_labels, { gpu: "a100" });
    assert.deepEqual(done.output, { by: w.worker.workerId });
  } finally {
    await w.close();
  }
});

test("P-CTRL-1..3, P-OBS-5: pause, resume, limits and history through the client", async () => {
  const paused = await client.pauseQueue("iq_ops");
  assert.equal(paused.paused, true);
  assert.equal(paused.queue_name, "iq_ops");
  const capped = await client.setQueueLimit("iq_ops", { max_running: 3 });
  assert.deepEqual([capped.paused, capped.max_running], [true, 3]);
  const handler = await client.setHandlerLimit("iq_ops_handler", { max_running: 2 });
  assert.deepEqual([handler.handler_name, handler.max_running], ["iq_ops_handler", 2]);
  const stats = await client.queueStats();
  const control = stats.queue_controls.find((c) => c.queue_name === "iq_ops");
  assert.deepEqual([control?.paused, control?.max_running], [true, 3]);
  assert.equal(stats.handler_controls.find((c) => c.handler_name === "iq_ops_handler")?.max_running, 2);
  const resumed = await client.resumeQueue("iq_ops");
  assert.equal(resumed.paused, false);
  assert.equal((await client.setQueueLimit("iq_ops", { max_running: null })).max_running, null);
  assert.equal((await client.setHandlerLimit("iq_ops_handler", { max_running: null })).max_running, null);
  const history = await client.queueHistory("iq_ops", { minutes: 5 });
  assert.equal(history.queue_name, "iq_ops");
  assert.equal(history.bucket_ms, 60_000);
  assert.ok(history.points.length <= 5);
});

test("examples/queues.ts (the README's Several queues) runs: it completes tasks of both queues and stops on SIGTERM", async () => {
  const child = spawn(process.execPath, ["--import", "tsx", join(SDK_DIR, "examples", "queues.ts")], {
    cwd: SDK_DIR, env: { ...process.env, ORCH8_URL: server.url }, stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  try {
    const low = await client.enqueue({ handler_name: "send_email", queue_name: "low", params: { to: "a@example.com" } });
    const high = await client.enqueue({ handler_name: "send_email", queue_name: "high", params: { to: "b@example.com" } });
    for (const [t, queue] of [[high, "high"], [low, "low"]] as const) {
      const done = await waitFor(async () => {
        if (child.exitCode !== null) throw new Error(`the example exited ${child.exitCode}: ${out}`);
        const got = await client.getTask(t.id);
        return got.status === "completed" ? got : undefined;
      }, `the example to complete the ${queue} task`, 30_000, 50);
      assert.deepEqual(done.output, { sent: true, queue });
    }
  } finally {
    child.kill("SIGTERM");
  }
  assert.equal(await exited, 0, out);
});
