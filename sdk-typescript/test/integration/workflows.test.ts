// P-SDK-25 against the real server: the README's Workflows example run as written, a
// failed instance returned as final (not thrown), and WaitTimeoutError carrying the last state.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Orch8Client, Worker, WaitTimeoutError, type TaskContext } from "../../src/index.js";
import { SDK_DIR, TestServer } from "../helpers/server.js";

const EXAMPLE = join(SDK_DIR, "examples", "workflow.ts");
let server: TestServer;
let client: Orch8Client;

before(async () => {
  server = await TestServer.start();
  client = server.client();
});
after(async () => server?.dispose());

test("the README's Workflows block is examples/workflow.ts, verbatim", () => {
  const readme = readFileSync(join(SDK_DIR, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Workflows"));
  const block = section.slice(section.indexOf("```ts\n") + 6, section.indexOf("```\n", section.indexOf("```ts\n") + 6));
  const example = readFileSync(EXAMPLE, "utf8");
  assert.equal(block, example.slice(example.indexOf("import {")));
});

test("P-SDK-25 examples/workflow.ts (the README's Workflows) runs its blocks, the catch recovers, and it prints the final output", async () => {
  const child = spawn(process.execPath, ["--import", "tsx", EXAMPLE], {
    cwd: SDK_DIR, env: { ...process.env, ORCH8_URL: server.url }, stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (err += b.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
  clearTimeout(timer);
  assert.equal(code, 0, `${out}\n${err}`);
  assert.equal(out.trim(), [
      'completed {"archived":"https://example.com/cat.png?w=800","why":"private images are not published"}',
      "resize:-:completed delivery:-:completed publish:try:failed archive:catch:completed",
    ].join("\n"));
  const [inst] = (await client.listInstances({ sequence: "thumbnail" })).instances;
  assert.deepEqual(inst?.steps.map((s) => [s.key, s.group, s.lane, s.status]), [
    ["resize", null, null, "completed"],
    ["delivery", null, null, "completed"],
    ["publish", "delivery", "try", "failed"],
    ["archive", "delivery", "catch", "completed"],
  ]);
  // Whole-string templates keep the value's JSON type (P-WF-12).
  const tasks = (await client.listTasks({ instance_id: inst!.id })).tasks;
  const resize = tasks.find((t) => t.context?.step_id === "resize");
  assert.deepEqual(resize?.params, { url: "https://example.com/cat.png", width: 800 });
});

test("P-SDK-25 waitInstance returns a failed instance as final, not as an error", async () => {
  await client.defineSequence({
    name: "charge_then_ship",
    steps: [
      { id: "charge", handler: "charge_card", retry: { max_attempts: 1 } },
      { id: "ship", handler: "ship_order" },
    ],
  });
  const inst = await client.startInstance({ sequence: "charge_then_ship", input: { order: 7 } });
  const worker = new Worker({
    client,
    handlers: {
      charge_card: (_ctx: TaskContext) => {
        throw new Error("card declined");
      },
      ship_order: () => ({ shipped: true }),
    },
  });
  const running = worker.run();
  try {
    const done = await client.waitInstance(inst.id, { timeoutMs: 30_000 });
    assert.equal(done.status, "failed");
    assert.ok(done.error, "the instance carries the step's failure");
    assert.match(done.error.message, /card declined/);
    assert.deepEqual(done.steps.map((s) => [s.id, s.status]), [["charge", "failed"], ["ship", "pending"]]);
  } finally {
    await worker.stop();
    await running;
  }
});

test("P-SDK-25 waitTask throws WaitTimeoutError carrying the last state, and returns a final task", async () => {
  const t = await client.enqueue({ handler_name: "nobody_runs_this", params: {} });
  const started = Date.now();
  const err = await client.waitTask(t.id, { timeoutMs: 300 }).catch((e: unknown) => e);
  assert.ok(err instanceof WaitTimeoutError, String(err));
  assert.equal((err.lastState as { id: string; status: string }).status, "pending");
  assert.ok(Date.now() - started < 5_000, "the server honoured the shortened wait_ms");
  // A task cancelled while waitTask is waiting: the long-poll answers at once with it.
  const waiting = client.waitTask(t.id, { timeoutMs: 20_000 });
  await client.cancelTask(t.id, { reason: "test" });
  assert.equal((await waiting).status, "cancelled");
});
