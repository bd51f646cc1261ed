// P-SDK-25 against the real server: the README's Workflows example run as written, a
// failed instance returned as final (not thrown), and WaitTimeoutError carrying the last state.
// P-WF-14: startInstances starts a batch in order, replays idempotency keys, all or none.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { NotFoundError, Orch8Client, Orch8Error, Worker, WaitTimeoutError, type TaskContext } from "../../src/index.js";
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

/** Defines a one-step sequence `name` (its step `remind`, handler `send_reminder`, never run here). */
async function reminderSequence(name: string): Promise<string> {
  await client.defineSequence({ name, steps: [{ id: "remind", handler: "send_reminder", params: { user: { $from: "input.user" } } }] });
  return name;
}

/** How many instances of `sequence` the server holds. */
async function countInstances(sequence: string): Promise<number> {
  return (await client.listInstances({ sequence, limit: 500 })).instances.length;
}

test("P-WF-14 startInstances starts the batch in request order, distinct instances, each first step running", async () => {
  const sequence = await reminderSequence("batch_reminder");
  const users = ["ada", "bob", "cy"];
  const { instances } = await client.startInstances(users.map((user) => ({ sequence, input: { user } })));
  assert.equal(instances.length, 3);
  assert.deepEqual(instances.map((i) => i.input), [{ user: "ada" }, { user: "bob" }, { user: "cy" }], "request order");
  assert.equal(new Set(instances.map((i) => i.id)).size, 3, "three distinct ids");
  for (const inst of instances) {
    assert.equal(inst.sequence, sequence);
    assert.equal(inst.status, "running");
    // The first step was dispatched in the batch's transaction (P-WF-4): its task exists.
    assert.deepEqual(inst.steps.map((s) => [s.id, s.status]), [["remind", "running"]]);
    const [task] = (await client.listTasks({ instance_id: inst.id })).tasks;
    assert.equal(task?.handler_name, "send_reminder");
    assert.deepEqual(task?.params, inst.input);
  }
  // Stored as answered: the list holds exactly these three.
  const listed = (await client.listInstances({ sequence, limit: 500 })).instances.map((i) => i.id);
  assert.deepEqual([...listed].sort(), instances.map((i) => i.id).sort());
});

test("P-WF-14 startInstances replays idempotency keys: the same ids again, in a batch and across batches", async () => {
  const sequence = await reminderSequence("batch_keyed");
  const keyed = [
    { sequence, input: { user: "dee" }, idempotency_key: "batch-dee" },
    { sequence, input: { user: "eve" }, idempotency_key: "batch-eve" },
  ];
  const first = (await client.startInstances(keyed)).instances;
  assert.equal(new Set(first.map((i) => i.id)).size, 2);
  assert.deepEqual(first.map((i) => i.idempotency_key), ["batch-dee", "batch-eve"]);
  // The replay gets the original instances, unchanged, whatever the new input.
  const again = (await client.startInstances(keyed.map((k) => ({ ...k, input: { user: "changed" } })))).instances;
  assert.deepEqual(again.map((i) => i.id), first.map((i) => i.id));
  assert.deepEqual(again.map((i) => i.input), [{ user: "dee" }, { user: "eve" }]);
  assert.equal(await countInstances(sequence), 2, "the replay stored nothing new");
  // An item repeating a key of an earlier item of the same batch gets that item's instance.
  const twice = (await client.startInstances([
    { sequence, input: { user: "fay" }, idempotency_key: "batch-fay" },
    { sequence, input: { user: "fay again" }, idempotency_key: "batch-fay" },
    { sequence, input: { user: "eve again" }, idempotency_key: "batch-eve" },
  ])).instances;
  assert.equal(twice[0]!.id, twice[1]!.id);
  assert.deepEqual(twice[1]!.input, { user: "fay" });
  assert.equal(twice[2]!.id, first[1]!.id);
  assert.equal(await countInstances(sequence), 3, "one new instance: fay");
});

test("P-WF-14 a batch naming an unknown sequence rejects with NotFoundError (404 not_found) and stores none of its items", async () => {
  const sequence = await reminderSequence("batch_all_or_none");
  await client.startInstances([{ sequence, input: { user: "gil" } }]);
  assert.equal(await countInstances(sequence), 1);
  const err = await client.startInstances([
    { sequence, input: { user: "hal" } },
    { sequence, input: { user: "ivy" }, idempotency_key: "batch-ivy" },
    { sequence: "batch_no_such_sequence", input: { user: "jo" } },
  ]).catch((e: unknown) => e);
  assert.ok(err instanceof NotFoundError, String(err));
  assert.ok(err instanceof Orch8Error);
  assert.equal(err.code, "not_found");
  assert.equal(err.status, 404);
  assert.equal(err.problem?.code, "not_found");
  assert.match(err.problem?.detail ?? "", /instances\/2/, "the problem names the item");
  assert.equal(await countInstances(sequence), 1, "nothing of the rejected batch was stored");
  // Its key was not taken either: starting with it now creates a new instance.
  const [ivy] = (await client.startInstances([{ sequence, input: { user: "ivy" }, idempotency_key: "batch-ivy" }])).instances;
  assert.deepEqual(ivy?.input, { user: "ivy" });
  assert.equal(await countInstances(sequence), 2);
});
