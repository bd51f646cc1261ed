// P-SDK-24 through the real server: the tenant option isolates work (P-TEN-3), and a worker
// refused by a scoped key (P-AUTH-3) keeps running until the key is fixed (SIGHUP).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ForbiddenError, NotFoundError, Worker, type Logger } from "../../src/index.js";
import { FAST_FLAGS, TestServer, waitFor } from "../helpers/server.js";
import { startWorker } from "../helpers/workers.js";

const started: TestServer[] = [];
const dirs: string[] = [];
after(async () => {
  await Promise.all(started.map((s) => s.dispose()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function serve(flags: Record<string, number | string> = FAST_FLAGS): Promise<TestServer> {
  const s = await TestServer.start(flags);
  started.push(s);
  return s;
}

test("P-SDK-24, P-TEN-3: a tenant's task is done by its own workers only", async () => {
  const server = await serve();
  const t1 = server.client({ tenant: "t1" });
  const t2 = server.client({ tenant: "t2" });
  const stolen: string[] = [];
  const other = startWorker(server, { client: t2, waitMs: 500, handlers: { ten_echo: (ctx) => void stolen.push(ctx.id) } });
  try {
    // A first long-poll answered empty and the next one sent: t2 waits on the server before
    // t1's task exists, and would claim it first if tenants were not isolated.
    await waitFor(() => other.worker.stats().polls >= 2, "t2's second long-poll");
    const task = await t1.enqueue({ handler_name: "ten_echo", params: { n: 1 } });
    assert.equal(task.tenant, "t1");
    const own = startWorker(server, { client: t1, handlers: { ten_echo: (ctx) => `t1 did ${String(ctx.params.n)}` } });
    try {
      const done = await waitFor(async () => {
        const t = await t1.getTask(task.id);
        return t.status === "completed" ? t : undefined;
      }, "the task completed");
      assert.equal(done.output, "t1 did 1");
    } finally {
      await own.close();
    }
    assert.deepEqual(stolen, []);
    assert.equal(other.worker.stats().tasks_claimed, 0);
    await assert.rejects(t2.getTask(task.id), NotFoundError); // P-TEN-3: foreign ids are 404
    assert.deepEqual((await t1.listTasks()).tasks.map((t) => t.id), [task.id]);
    assert.deepEqual((await t2.listTasks()).tasks, []);
  } finally {
    await other.close();
  }
});

const sha = (secret: string) => createHash("sha256").update(secret).digest("hex");

function writeKeys(path: string, queue: string): void {
  writeFileSync(path, `
[[key]]
id = "p-t1"
sha256 = "${sha("producer-secret")}"
role = "producer"
tenant = "t1"

[[key]]
id = "w-t1"
sha256 = "${sha("worker-secret")}"
role = "worker"
tenant = "t1"
queues = ["${queue}"]
`);
}

test("P-SDK-24: a worker refused by its key (403) keeps running and works once the key is fixed (SIGHUP)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "orch8-keys-"));
  dirs.push(dir);
  const keys = join(dir, "keys.toml");
  writeKeys(keys, "elsewhere"); // the worker key may not register for the default queue
  const server = await serve({ ...FAST_FLAGS, "keys-file": keys });
  const producer = server.client({ apiKey: "producer-secret" });
  const err = await producer.listWorkers().catch((e: unknown) => e); // P-AUTH-3: not a producer's call
  assert.ok(err instanceof ForbiddenError, String(err));
  assert.equal(err.status, 403);

  const warnings: string[] = [];
  const none = () => {};
  const logger: Logger = { debug: none, info: none, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
  const w = new Worker({
    client: server.client({ apiKey: "worker-secret" }), workerId: "w-scoped", handleSignals: false, waitMs: 1000, logger,
    handlers: { ten_fixed: () => "fixed" },
  });
  const run = w.run();
  let settled = false;
  void run.finally(() => (settled = true));
  try {
    const refused = () => warnings.filter((l) => l.includes("registration refused, retrying in ") && l.includes(": HTTP 403 forbidden: ")).length;
    await waitFor(() => refused() >= 2, "two refused registrations");
    assert.equal(settled, false, "run() is still running");
    assert.equal(w.stats().polls, 0);
    const task = await producer.enqueue({ handler_name: "ten_fixed" });
    writeKeys(keys, "default");
    server.hangup(); // P-AUTH-4: the server re-reads the file
    const done = await waitFor(async () => {
      const t = await producer.getTask(task.id);
      return t.status === "completed" ? t : undefined;
    }, "the task done by the worker whose key was fixed", 20_000);
    assert.equal(done.output, "fixed");
    assert.equal(done.tenant, "t1");
  } finally {
    await w.stop();
    await run;
  }
});
