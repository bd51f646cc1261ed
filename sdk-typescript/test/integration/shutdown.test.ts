// Graceful shutdown, the grace period, directives and process signals (P-SDK-7, P-SDK-8,
// P-WORKER-3) against the real reference server.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { NotFoundError, ShutdownError, type Orch8Client, type TaskContext } from "../../src/index.js";
import { SDK_DIR, TestServer, waitFor } from "../helpers/server.js";
import { aborted, startWorker, work } from "../helpers/workers.js";

let server: TestServer;
let client: Orch8Client;

before(async () => {
  server = await TestServer.start();
  client = server.client();
});
after(async () => server?.dispose());

const status = async (id: string) => (await client.getTask(id)).status;

// The reference server forgets a deregistered worker (GET answers 404); the contract's
// Worker.state also allows `deregistered`. Either proves the deregistration.
const deregistered = async (workerId: string) =>
  client.getWorker(workerId).then((w) => w.state === "deregistered", (e: unknown) => e instanceof NotFoundError);

test("graceful shutdown: the in-flight task finishes and is reported, the long-poll is aborted at once", async () => {
  let started = false;
  const w = startWorker(server, {
    concurrency: 2, // a second slot keeps a 30 s long-poll open while the task runs
    handlers: { sd_slow: async () => { started = true; await work(700); return "finished"; } },
  });
  const t = await client.enqueue({ handler_name: "sd_slow" });
  await waitFor(() => started, "the handler to start");
  await waitFor(() => w.calls.filter((c) => c.path === "/workers/tasks/poll/batch").length >= 2, "a second long-poll to be open");
  const t0 = Date.now();
  await w.worker.stop();
  const took = Date.now() - t0;
  assert.ok(took < 3000, `stop took ${took} ms: the 30 s long-poll was not aborted`);
  const done = await client.getTask(t.id);
  assert.equal(done.status, "completed");
  assert.equal(done.output, "finished");
  assert.ok(await deregistered(w.worker.workerId));
  const last = w.calls.at(-1);
  assert.deepEqual([last?.method, last?.status], ["DELETE", 200], "deregistration is the last call");
});

test("grace period exceeded: the handler's signal fires and the leftover fails with code shutdown", async () => {
  let started = false;
  let reason: unknown;
  const w = startWorker(server, {
    gracePeriodMs: 300,
    handlers: {
      sd_stuck: async (ctx: TaskContext) => {
        started = true;
        reason = await aborted(ctx.signal);
        await work(200); // ignores the signal a little longer: its result must be dropped
        return "too late";
      },
    },
  });
  const t = await client.enqueue({ handler_name: "sd_stuck" });
  await waitFor(() => started, "the handler to start");
  await w.close();
  assert.ok(reason instanceof ShutdownError, String(reason));
  const attempts = await client.listTaskAttempts(t.id);
  assert.equal(attempts.attempts.length, 1);
  assert.equal(attempts.attempts[0]!.outcome, "failed");
  assert.equal(attempts.attempts[0]!.error?.code, "shutdown");
  assert.equal(attempts.attempts[0]!.error?.retryable, true);
  assert.ok(["pending", "scheduled"].includes(await status(t.id)), "shutdown failures are retryable");
  assert.equal(w.worker.stats().tasks_failed, 1);
  await work(300);
  assert.equal(w.calls.filter((c) => /\/complete(\/batch)?$/.test(c.path)).length, 0, "the late result was dropped");
});

test("quiet directive stops claiming; resume directive claims again", async () => {
  const w = startWorker(server, { handlers: { sd_quiet: () => "done" } });
  try {
    await waitFor(() => w.calls.some((c) => c.path === "/workers/tasks/poll/batch"), "the worker to poll");
    await client.quietWorker(w.worker.workerId);
    await waitFor(() => w.worker.isQuiet, "the quiet directive to arrive");
    await waitFor(async () => (await client.getWorker(w.worker.workerId)).state === "quiet", "the worker to report quiet");
    const pollsWhenQuiet = w.calls.filter((c) => c.path === "/workers/tasks/poll/batch").length;
    const t = await client.enqueue({ handler_name: "sd_quiet" });
    await work(1000); // a bounded window in which nothing may be claimed
    assert.equal(await status(t.id), "pending");
    assert.equal(w.calls.filter((c) => c.path === "/workers/tasks/poll/batch").length, pollsWhenQuiet, "no poll while quiet");
    await client.resumeWorker(w.worker.workerId);
    await waitFor(async () => (await status(t.id)) === "completed", "the task to complete after resume");
    assert.equal(w.worker.isQuiet, false);
  } finally {
    await w.close();
  }
});

test("terminate directive shuts the worker down gracefully", async () => {
  const w = startWorker(server, { handlers: { sd_term: () => "done" } });
  await waitFor(() => w.calls.some((c) => c.path === "/workers/tasks/poll/batch"), "the worker to poll");
  await client.terminateWorker(w.worker.workerId);
  const finished = await Promise.race([w.done.then(() => true), work(5000).then(() => false)]);
  assert.ok(finished, "run() resolved after the terminate directive");
  assert.ok(await deregistered(w.worker.workerId));
  assert.deepEqual(w.calls.filter((c) => c.method === "DELETE").map((c) => c.status), [200]);
});

function spawnWorker(workerId: string, graceMs = 25000) {
  const child = spawn(process.execPath, ["--import", "tsx", "test/fixtures/signal-worker.ts"], {
    cwd: SDK_DIR,
    env: { ...process.env, ORCH8_URL: server.url, WORKER_ID: workerId, GRACE_MS: String(graceMs) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const events: Array<{ event: string; [k: string]: unknown }> = [];
  let buf = "";
  let errText = "";
  child.stdout!.on("data", (b: Buffer) => {
    buf += b.toString();
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      events.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
    }
  });
  child.stderr!.on("data", (b: Buffer) => (errText += b.toString()));
  const exit = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const has = (e: string) => events.some((x) => x.event === e);
  return { child, events, exit, has, stderr: () => errText };
}

test("SIGTERM: the worker process finishes its task, reports it and exits 0", async () => {
  const p = spawnWorker("ts-sig-term");
  try {
    await waitFor(() => p.has("polling"), "the worker process to start", 20_000);
    const t = await client.enqueue({ handler_name: "sig_task", params: { ms: 800 } });
    await waitFor(() => p.has("start"), "the task to start");
    p.child.kill("SIGTERM");
    const code = await p.exit;
    assert.equal(code, 0, p.stderr());
    assert.deepEqual(p.events.map((e) => e.event), ["polling", "start", "finish", "exited"]);
    assert.equal(await status(t.id), "completed");
    assert.ok(await deregistered("ts-sig-term"));
  } finally {
    p.child.kill("SIGKILL");
  }
});

test("SIGTSTP quiets the worker process and SIGCONT resumes it; SIGINT stops it", async () => {
  const p = spawnWorker("ts-sig-tstp");
  try {
    await waitFor(() => p.has("polling"), "the worker process to start", 20_000);
    p.child.kill("SIGTSTP");
    await waitFor(async () => (await client.getWorker("ts-sig-tstp")).state === "quiet", "the worker to report quiet");
    const t = await client.enqueue({ handler_name: "sig_task", params: { ms: 0 } });
    await work(800); // a bounded window in which nothing may be claimed
    assert.equal(await status(t.id), "pending");
    p.child.kill("SIGCONT");
    await waitFor(async () => (await status(t.id)) === "completed", "the task to complete after SIGCONT");
    p.child.kill("SIGINT");
    assert.equal(await p.exit, 0, p.stderr());
    assert.ok(p.has("exited"));
  } finally {
    p.child.kill("SIGKILL");
  }
});
