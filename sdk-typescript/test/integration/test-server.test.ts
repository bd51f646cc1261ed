// startTestServer (docs/protocol.md 17, P-CLOCK-1..5): a real orch8-server with the test
// clock, the SDK's own Worker in-process, time skipped only while the workers are idle.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TaskContext } from "../../src/index.js";
import { startTestServer, type TestServer } from "../../src/testing/index.js";
import { REPO_ROOT } from "../helpers/server.js";

const HOUR = 3_600_000;
const TEN_MINUTES = 600_000;
process.env.ORCH8_SERVER ??= join(REPO_ROOT, ".venv", "bin", "orch8-server");
let server: TestServer;

before(async () => {
  server = await startTestServer();
});
after(async () => server?.close());

test("P-CLOCK-2 a retry backoff of ten minutes is skipped with advance(); attempt 2 completes", async () => {
  const attempts: number[] = [];
  server.startWorker(server.worker({ handlers: {
    flaky_charge: (ctx: TaskContext) => {
      attempts.push(ctx.attempt);
      if (ctx.attempt === 1) throw new Error("gateway timeout");
      return { charged: true };
    },
  } }));
  const retry = { max_attempts: 3, initial_backoff_ms: TEN_MINUTES, max_backoff_ms: TEN_MINUTES, jitter: 0 };
  const task = await server.client.enqueue({ handler_name: "flaky_charge", retry });
  await server.advance(TEN_MINUTES - 1); // waits for attempt 1 to fail first (P-CLOCK-3)
  assert.equal((await server.client.getTask(task.id)).status, "scheduled");
  await server.advance(1);
  const done = await server.client.waitTask(task.id, { timeoutMs: 10_000 });
  assert.deepEqual([done.status, done.attempt, done.output], ["completed", 2, { charged: true }]);
  assert.deepEqual(attempts, [1, 2]);
});

test("P-CLOCK-2 a workflow with a one-hour sleep runs to completed in well under 2 s of wall time", async () => {
  await server.client.defineSequence({ name: "nap", steps: [
    { id: "fetch", handler: "nap_fetch" },
    { id: "nap", handler: "sleep", params: { duration_ms: HOUR } },
    { id: "send", handler: "nap_send", params: { rows: { $from: "steps.fetch.output.rows" } } },
  ] });
  const started = Date.now();
  const { id } = await server.client.startInstance({ sequence: "nap" });
  const before = Date.parse((await server.clock()).now);
  const worker = server.worker({ handlers: {
    nap_fetch: () => ({ rows: 3 }),
    nap_send: (ctx: TaskContext) => ({ sent: ctx.params.rows }),
  } });
  const instance = await server.runUntilFinal(worker, { instanceId: id });
  assert.equal(instance.status, "completed", JSON.stringify(instance));
  assert.deepEqual(instance.output, { sent: 3 });
  assert.deepEqual(instance.steps.map((s) => [s.id, s.status]), [["fetch", "completed"], ["nap", "completed"], ["send", "completed"]]);
  assert.equal(Date.parse((await server.clock()).now) - before, HOUR, "the clock moved by the sleep, exactly");
  assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
});

test("P-CLOCK-3 advance() waits until the worker holds no task, so a skip past the lease loses nothing", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  server.startWorker(server.worker({ handlers: { slow_export: async () => { started(); await gate; return "exported"; } } }));
  const task = await server.client.enqueue({ handler_name: "slow_export" });
  await running;
  let advanced = false;
  const advancing = server.advance(2 * HOUR).then((clock) => { advanced = true; return clock; });
  await server.clock(); // a round trip: an advance sent at once would have been answered by now
  assert.equal(advanced, false, "advance() did not wait for the held task");
  release();
  assert.equal((await advancing).advanced_ms, 2 * HOUR);
  const done = await server.client.getTask(task.id);
  assert.deepEqual([done.status, done.attempt, done.output], ["completed", 1, "exported"]);
});

test("runUntilFinal says what it waits for when no handler and no timer can end the instance", async () => {
  await server.client.defineSequence({ name: "orphan", steps: [{ id: "a", handler: "nobody_handles_this" }] });
  const { id } = await server.client.startInstance({ sequence: "orphan" });
  await assert.rejects(server.runUntilFinal(server.worker({ handlers: { unrelated: () => null } }), { instanceId: id }), (err: Error) => {
    assert.match(err.message, new RegExp(`instance ${id} is not final, yet nothing runs, .* no timer is set`));
    return true;
  });
});

test("runUntilFinal runs a task through a 10-minute retry backoff", async () => {
  const retry = { max_attempts: 2, initial_backoff_ms: TEN_MINUTES, max_backoff_ms: TEN_MINUTES, jitter: 0 };
  const task = await server.client.enqueue({ handler_name: "flaky_once", retry });
  const worker = server.worker({ handlers: { flaky_once: (ctx: TaskContext) => { if (ctx.attempt === 1) throw new Error("not yet"); return ctx.attempt; } } });
  const before = Date.parse((await server.clock()).now);
  const done = await server.runUntilFinal(worker, { taskId: task.id });
  assert.deepEqual([done.status, done.attempt, done.output], ["completed", 2, 2]);
  assert.equal(Date.parse((await server.clock()).now) - before, TEN_MINUTES);
});

test("ORCH8_SERVER may be a command with arguments: python -m orch8_server", async () => {
  const saved = process.env.ORCH8_SERVER;
  process.env.ORCH8_SERVER = `${join(REPO_ROOT, ".venv", "bin", "python")} -m orch8_server`;
  try {
    const other = await startTestServer();
    try {
      assert.equal((await other.clock()).mode, "test");
    } finally {
      await other.close();
    }
  } finally {
    process.env.ORCH8_SERVER = saved;
  }
});

test("a missing server is a clear error naming ORCH8_SERVER, PATH and how to install it", async () => {
  const saved = { server: process.env.ORCH8_SERVER, path: process.env.PATH };
  const empty = mkdtempSync(join(tmpdir(), "orch8-no-server-"));
  try {
    delete process.env.ORCH8_SERVER;
    process.env.PATH = empty;
    await assert.rejects(startTestServer(), /ORCH8_SERVER is not set and no orch8-server is on PATH.*pip install orch8-server/s);
    process.env.ORCH8_SERVER = join(empty, "orch8-server");
    await assert.rejects(startTestServer(), /cannot start .*orch8-server.*ENOENT/);
  } finally {
    process.env.ORCH8_SERVER = saved.server;
    process.env.PATH = saved.path;
    rmSync(empty, { recursive: true, force: true });
  }
});
