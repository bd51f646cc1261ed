// Orch8Client against the real reference server on loopback.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import {
  ConflictError, LeaseLostError, NotFoundError, Orch8Client, SPEC_SHA256, SPEC_VERSION, TaskCancelledError,
  UnavailableError, ValidationError,
} from "../../src/index.js";
import { TestServer } from "../helpers/server.js";

let server: TestServer;
let client: Orch8Client;

before(async () => {
  server = await TestServer.start();
  client = server.client();
});
after(async () => server?.dispose());

test("the server was built from the same contract as this SDK", async () => {
  const info = await client.serverInfo();
  assert.equal(info.spec_sha256, SPEC_SHA256);
  assert.equal(info.spec_version, SPEC_VERSION);
});

test("seed flow: enqueue, pollTask, completeTask, getTask", async () => {
  const created = await client.enqueue({ handler_name: "it_seed", params: { image_url: "x", width: 800 } });
  assert.equal(created.status, "pending");
  const task = await client.pollTask({ handler_names: ["it_seed"], worker_id: "img-worker-1", wait_ms: 1000 });
  assert.ok(task);
  assert.equal(task.id, created.id);
  assert.deepEqual(task.params, { image_url: "x", width: 800 });
  assert.equal(task.lease.worker_id, "img-worker-1");
  const outcome = await client.completeTask(task.id, { output: { url: "https://cdn.example.com/processed.png" } });
  assert.equal(outcome.status, "completed");
  const got = await client.getTask(task.id);
  assert.equal(got.status, "completed");
  assert.deepEqual(got.output, { url: "https://cdn.example.com/processed.png" });
});

test("seed 000's batch_size on pollTask is accepted; the answer is still one task (P-POLL-8)", async () => {
  await client.enqueueBatch([{ handler_name: "it_seed_bs" }, { handler_name: "it_seed_bs" }]);
  const task = await client.pollTask({ handler_names: ["it_seed_bs"], worker_id: "img-worker-1", batch_size: 5, wait_ms: 1000 });
  assert.ok(task && typeof task.id === "string", "one claimed task, not a list");
  const rest = await client.pollTask({ handler_names: ["it_seed_bs"], worker_id: "img-worker-1", batch_size: 5, wait_ms: 1000 });
  assert.ok(rest && rest.id !== task.id, "the second task was left for the next poll");
});

test("pollTask resolves to null when nothing arrives (204)", async () => {
  assert.equal(await client.pollTask({ handler_names: ["it_nothing"], wait_ms: 0 }), null);
});

test("failTask with retryable re-queues; a stale lease gets LeaseLostError", async () => {
  await client.enqueue({ handler_name: "it_fail", retry: { max_attempts: 3, initial_backoff_ms: 0 } });
  const first = await client.pollTask({ handler_names: ["it_fail"], wait_ms: 1000 });
  assert.ok(first);
  const outcome = await client.failTask(first.id, { error: "Out of memory", retryable: true, lease_id: first.lease.id });
  assert.ok(["pending", "scheduled"].includes(outcome.status), outcome.status);
  assert.equal(outcome.attempts_left, 2);
  const second = await client.pollTask({ handler_names: ["it_fail"], wait_ms: 2000 });
  assert.ok(second);
  assert.equal(second.attempt, 2);
  await assert.rejects(client.completeTask(second.id, { lease_id: first.lease.id, output: 1 }), LeaseLostError);
  const perm = await client.failTask(second.id, { error: "bad input", lease_id: second.lease.id });
  assert.equal(perm.status, "failed");
  const attempts = await client.listTaskAttempts(second.id);
  assert.deepEqual(attempts.attempts.map((a) => a.outcome), ["failed", "failed"]);
});

test("heartbeat with progress and checkpoint; the next attempt sees the checkpoint", async () => {
  await client.enqueue({ handler_name: "it_ckpt" });
  const t = await client.pollTask({ handler_names: ["it_ckpt"], wait_ms: 1000 });
  assert.ok(t);
  const hb = await client.heartbeat(t.id, { lease_id: t.lease.id, progress: { percent: 40 }, checkpoint: { cursor: 4000 } });
  assert.equal(hb.cancel_requested, false);
  assert.ok(Date.parse(hb.lease_expires_at) >= Date.parse(t.lease.expires_at));
  await client.releaseTask(t.id, { lease_id: t.lease.id });
  const again = await client.pollTask({ handler_names: ["it_ckpt"], wait_ms: 1000 });
  assert.ok(again);
  assert.deepEqual(again.checkpoint, { cursor: 4000 });
  assert.equal(again.attempt, 1, "release does not spend an attempt");
});

test("errors are typed: 404, 422 with pointers, 409 invalid_state, task_cancelled", async () => {
  await assert.rejects(client.getTask("task_doesnotexist"), NotFoundError);
  const bad = await client.enqueueBatch([{ handler_name: "ok" }, { handler_name: "" }]).catch((e: unknown) => e);
  assert.ok(bad instanceof ValidationError, String(bad));
  assert.ok(bad.errors.some((e) => e.pointer.startsWith("/tasks/1")), JSON.stringify(bad.errors));
  const t = await client.enqueue({ handler_name: "it_cancel" });
  const cancelled = await client.cancelTask(t.id, { reason: "changed my mind" });
  assert.equal(cancelled.status, "cancelled");
  assert.equal(cancelled.cancel_reason, "changed my mind");
  const retried = await client.retryTask(t.id);
  assert.equal(retried.status, "pending");
  const claimed = await client.pollTask({ handler_names: ["it_cancel"], wait_ms: 1000 });
  assert.ok(claimed);
  await client.cancelTask(t.id);
  await assert.rejects(client.completeTask(t.id, { lease_id: claimed.lease.id, output: 1 }), TaskCancelledError);
  const done = await client.enqueue({ handler_name: "it_done" });
  const c2 = await client.pollTask({ handler_names: ["it_done"], wait_ms: 1000 });
  await client.completeTask(c2!.id, {});
  await assert.rejects(client.cancelTask(done.id), ConflictError);
});

test("idempotency_key returns the existing task; batch enqueue keeps order", async () => {
  const a = await client.enqueue({ handler_name: "it_idem", idempotency_key: "k-1", params: { n: 1 } });
  const b = await client.enqueue({ handler_name: "it_idem", idempotency_key: "k-1", params: { n: 2 } });
  assert.equal(a.id, b.id);
  assert.deepEqual(b.params, { n: 1 });
  const batch = await client.enqueueBatch([{ handler_name: "it_b", params: { i: 0 } }, { handler_name: "it_b", params: { i: 1 } }]);
  assert.deepEqual(batch.map((t) => t.params), [{ i: 0 }, { i: 1 }]);
  const page = await client.listTasks({ handler_name: "it_b", limit: 1 });
  assert.equal(page.tasks.length, 1);
  assert.ok(page.next_cursor);
  const next = await client.listTasks({ handler_name: "it_b", limit: 1, cursor: page.next_cursor });
  assert.equal(next.tasks.length, 1);
  assert.notEqual(next.tasks[0]!.id, page.tasks[0]!.id);
});

test("batch poll, batch complete and batch fail answer per item", async () => {
  await client.enqueueBatch([{ handler_name: "it_batch" }, { handler_name: "it_batch" }, { handler_name: "it_batch" }]);
  const polled = await client.pollTasks({ handler_names: ["it_batch"], batch_size: 3, wait_ms: 1000 });
  assert.equal(polled.tasks.length, 3);
  const [t1, t2, t3] = polled.tasks;
  const done = await client.completeTasks([
    { task_id: t1!.id, lease_id: t1!.lease.id, output: 1 },
    { task_id: t2!.id, lease_id: "lease_wrong", output: 2 },
  ]);
  assert.deepEqual(done.items.map((i) => i.status), ["completed", "error"]);
  assert.equal(done.items[1]!.problem?.code, "lease_lost");
  const failed = await client.failTasks([{ task_id: t3!.id, lease_id: t3!.lease.id, error: "x" }]);
  assert.deepEqual(failed.items.map((i) => i.status), ["failed"]);
});

test("workers: register, heartbeat, directives, list, deregister; queue stats", async () => {
  const reg = await client.registerWorker({ worker_id: "it-w1", handlers: ["it_w"], concurrency: 2, sdk: "orch8-typescript/test" });
  assert.equal(reg.heartbeat_interval_ms, 300);
  await client.quietWorker("it-w1");
  assert.equal((await client.heartbeatWorker("it-w1", { active_task_ids: [] })).directive, "quiet");
  await client.resumeWorker("it-w1");
  assert.equal((await client.heartbeatWorker("it-w1", {})).directive, "running");
  await client.terminateWorker("it-w1");
  assert.equal((await client.heartbeatWorker("it-w1", {})).directive, "terminate");
  assert.ok((await client.listWorkers()).workers.some((w) => w.worker_id === "it-w1"));
  assert.equal((await client.getWorker("it-w1")).worker_id, "it-w1");
  assert.equal((await client.deregisterWorker("it-w1")).state, "deregistered");
  await client.enqueue({ handler_name: "it_stats", queue_name: "it-q" });
  const stats = await client.queueStats({ queue_name: "it-q" });
  assert.deepEqual(stats.queues.map((q) => [q.handler_name, q.pending]), [["it_stats", 1]]);
});

test("an unreachable server surfaces as UnavailableError connection_error", async () => {
  // Port 1 is privileged and unused on loopback: the connection is refused at once.
  const dead = new Orch8Client({ baseUrl: "http://127.0.0.1:1", maxRetries: 1 });
  const err = await dead.getTask("task_x").catch((e: unknown) => e);
  assert.ok(err instanceof UnavailableError, String(err));
  assert.equal(err.code, "connection_error");
});
