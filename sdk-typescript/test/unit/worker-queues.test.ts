// P-SDK-23 (several queues), against a routing fetch mock: the options refused when the
// Worker is built, the exact poll and registration bodies, the handler's ctx.queueName;
// and the producer/operator side of issue 20 on Orch8Client (required_labels, queue
// controls, history) with their wire shapes and retry policy.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Orch8Client, Worker, type Logger, type QueueControl, type WorkerOptions } from "../../src/index.js";
import { json, mockFetch, problem } from "../helpers/mock-fetch.js";
import { claimed, hangUntilAborted, routed, until, worker, type Route } from "../helpers/routed.js";

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const POLL = "POST /workers/tasks/poll/batch";
const base = (poll: Route): Record<string, Route> => ({
  "POST /workers": () => json(200, worker("w")),
  "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 1000, tasks: [] }),
  [POLL]: poll,
  "DELETE /workers/w": () => json(200, worker("w")),
});
const make = (m: ReturnType<typeof routed>, o: Partial<WorkerOptions>) =>
  new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false, logger: silent, handlers: { h: () => 1 }, ...o });
const bodies = (m: ReturnType<typeof routed>, key: string) => m.calls.filter((c) => c.key === key).map((c) => c.body as Record<string, unknown>);

/** Runs a worker until it has sent `polls` polls (each answered empty, the last left hanging). */
async function polled(o: Partial<WorkerOptions>, polls = 3) {
  const m = routed(base((req, n) => (n < polls ? json(200, { tasks: [], next_poll_after_ms: 0 }) : hangUntilAborted(req, n))));
  const w = make(m, o);
  const run = w.run();
  await until(() => m.count(POLL) === polls, `${polls} polls`);
  await w.stop();
  await run;
  return { polls: bodies(m, POLL), registration: bodies(m, "POST /workers")[0]! };
}

// Each bad combination, with the option its message must name (P-SDK-23).
const refusals: Array<[string, Partial<WorkerOptions>, RegExp]> = [
  ["a single queue and a list", { queueName: "a", queueNames: ["a", "b"] }, /queueName and queueNames/],
  ["an empty list", { queueNames: [] }, /queueNames is empty/],
  ["a repeated name", { queueNames: ["a", "b", "a"] }, /queueNames repeats the queue "a"/],
  ["more than 10 names", { queueNames: Array.from({ length: 11 }, (_, i) => `q${i}`) }, /queueNames lists 11 queues; at most 10/],
  ["a non-string name", { queueNames: ["a", 7 as unknown as string] }, /queueNames entries/],
  ["weights missing a listed name", { queueNames: ["a", "b"], queueWeights: { a: 1 } }, /queueWeights must name exactly.*no weight for "b"/],
  ["weights naming an unlisted queue", { queueNames: ["a"], queueWeights: { a: 1, z: 2 } }, /queueWeights must name exactly.*not in queueNames: "z"/],
  ["a weight of 0", { queueNames: ["a", "b"], queueWeights: { a: 0, b: 1 } }, /queueWeights\["a"\] is 0; a weight is an integer from 1 to 1000/],
  ["a weight of 1001", { queueNames: ["a", "b"], queueWeights: { a: 1, b: 1001 } }, /queueWeights\["b"\] is 1001/],
  ["a fractional weight", { queueNames: ["a"], queueWeights: { a: 1.5 } }, /queueWeights\["a"\] is 1.5/],
  ["weights without a list", { queueWeights: { a: 1 } }, /queueWeights needs queueNames/],
  ["weights without a list, beside queueName", { queueName: "a", queueWeights: { a: 1 } }, /queueWeights needs queueNames/],
];

for (const [what, options, message] of refusals) {
  test(`P-SDK-23: the Worker constructor refuses ${what} with a TypeError, before any request`, () => {
    const m = mockFetch(() => json(200, {}));
    assert.throws(
      () => new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }), handleSignals: false, handlers: { h: () => 1 }, ...options }),
      (err: unknown) => err instanceof TypeError && message.test(err.message),
    );
    assert.equal(m.calls.length, 0);
  });
}

test("P-SDK-23: the edges are accepted: 10 names, weights 1 and 1000", () => {
  const client = new Orch8Client({ baseUrl: "http://h:1" });
  const ten = Array.from({ length: 10 }, (_, i) => `q${i}`);
  assert.doesNotThrow(() => new Worker({ client, handlers: { h: () => 1 }, queueNames: ten }));
  assert.doesNotThrow(() => new Worker({ client, handlers: { h: () => 1 }, queueNames: ["a", "b"], queueWeights: { a: 1, b: 1000 } }));
});

test("P-SDK-23, P-QUEUE-2: a strict list goes unchanged in every poll; registration queues is the list", async () => {
  const names = ["high", "low"];
  const { polls, registration } = await polled({ queueNames: names, concurrency: 1 });
  names.push("mutated later"); // the worker keeps its own copy
  for (const body of polls) {
    assert.deepEqual(body, { handler_names: ["h"], worker_id: "w", batch_size: 1, wait_ms: 30_000, queue_names: ["high", "low"] });
  }
  assert.deepEqual(registration.queues, ["high", "low"]);
});

test("P-SDK-23, P-QUEUE-3: weights go unchanged in every poll beside the list", async () => {
  const { polls, registration } = await polled({ queueNames: ["a", "b", "c"], queueWeights: { c: 1, a: 3, b: 1000 }, concurrency: 4 });
  assert.equal(polls.length, 3);
  for (const body of polls) {
    assert.deepEqual(body.queue_names, ["a", "b", "c"]);
    assert.deepEqual(body.queue_weights, { a: 3, b: 1000, c: 1 });
    assert.equal("queue_name" in body, false);
    assert.equal(body.batch_size, 4);
  }
  assert.deepEqual(registration.queues, ["a", "b", "c"]);
});

test("P-SDK-23: one queue or none behaves as before (queue_name only; registration queues [name] or [default])", async () => {
  const one = await polled({ queueName: "gpu" }, 2);
  for (const body of one.polls) {
    assert.equal(body.queue_name, "gpu");
    assert.equal("queue_names" in body || "queue_weights" in body, false);
  }
  assert.deepEqual(one.registration.queues, ["gpu"]);
  const none = await polled({}, 2);
  for (const body of none.polls) assert.equal("queue_name" in body || "queue_names" in body || "queue_weights" in body, false);
  assert.deepEqual(none.registration.queues, ["default"]);
});

test("P-SDK-23: ctx.queueName is the claimed task's own queue", async () => {
  const seen: string[] = [];
  const onQueue = (id: string, queue: string) => ({ ...claimed(id, 60_000), queue_name: queue });
  const m = routed({
    ...base((req, n) => (n === 1 ? json(200, { tasks: [onQueue("t1", "low"), onQueue("t2", "high")], next_poll_after_ms: 0 }) : hangUntilAborted(req, n))),
    "POST /workers/tasks/complete/batch": (req) => json(200, { items: (req.body as { items: Array<{ task_id: string }> }).items.map((i) => ({ task_id: i.task_id, status: "completed", attempt: 1, attempts_left: 2, next_attempt_at: null, problem: null })) }),
  });
  const w = make(m, { queueNames: ["high", "low"], handlers: { h: (ctx) => { seen.push(`${ctx.id}:${ctx.queueName}`); return 1; } } });
  const run = w.run();
  await until(() => w.stats().tasks_completed === 2, "both completions");
  await w.stop();
  await run;
  assert.deepEqual(seen.sort(), ["t1:low", "t2:high"]);
});

// --- producer and operator calls (issue 20) on Orch8Client ---------------------------------

const control = (paused: boolean, max: number | null): QueueControl => ({
  queue_name: "emails", paused, paused_at: paused ? "2026-01-01T00:00:00.000Z" : null, max_running: max, running: 0, updated_at: "2026-01-01T00:00:00.000Z",
});

test("P-LABEL-1: enqueue and enqueueBatch send required_labels as given", async () => {
  const task = { id: "t", required_labels: { gpu: "a100" } };
  const m = mockFetch(() => json(201, task), () => json(201, { tasks: [task] }));
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  await client.enqueue({ handler_name: "render", required_labels: { gpu: "a100" } });
  await client.enqueueBatch([{ handler_name: "render", required_labels: { gpu: "a100", region: "eu" } }]);
  assert.deepEqual(m.calls[0]!.body, { handler_name: "render", required_labels: { gpu: "a100" } });
  assert.deepEqual(m.calls[1]!.body, { tasks: [{ handler_name: "render", required_labels: { gpu: "a100", region: "eu" } }] });
});

test("P-CTRL-1, P-CTRL-2, P-OBS-5: queue controls and history hit their paths with typed answers", async () => {
  const history = { queue_name: "emails", bucket_ms: 60_000, generated_at: "2026-01-01T00:00:00.000Z", points: [] };
  const handler = { handler_name: "send", max_running: 2, running: 0, updated_at: null };
  const m = mockFetch(
    () => json(200, control(true, null)), () => json(200, control(false, null)), () => json(200, control(false, 5)),
    () => json(200, handler), () => json(200, history),
  );
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  assert.equal((await client.pauseQueue("emails")).paused, true);
  assert.equal((await client.resumeQueue("emails")).paused, false);
  assert.equal((await client.setQueueLimit("emails", { max_running: 5 })).max_running, 5);
  assert.equal((await client.setHandlerLimit("send", { max_running: 2 })).max_running, 2);
  assert.equal((await client.queueHistory("emails", { minutes: 15 })).bucket_ms, 60_000);
  assert.deepEqual(m.calls.map((c) => `${c.method} ${c.url.pathname}${c.url.search}`), [
    "POST /queues/emails/pause", "POST /queues/emails/resume", "PUT /queues/emails/limit",
    "PUT /handlers/send/limit", "GET /queues/emails/history?minutes=15",
  ]);
  assert.deepEqual(m.calls[2]!.body, { max_running: 5 });
  assert.deepEqual(m.calls[3]!.body, { max_running: 2 });
});

test("P-SDK-2: the queue-control calls are safe, so an outage answer is retried", async () => {
  const client = (fetch: (r: Request) => Promise<Response>) => new Orch8Client({ baseUrl: "http://h:1", fetch, maxRetries: 3 });
  const calls: Array<[string, (c: Orch8Client) => Promise<unknown>]> = [
    ["pauseQueue", (c) => c.pauseQueue("emails")],
    ["resumeQueue", (c) => c.resumeQueue("emails")],
    ["setQueueLimit", (c) => c.setQueueLimit("emails", { max_running: null })],
    ["setHandlerLimit", (c) => c.setHandlerLimit("send", { max_running: null })],
    ["queueHistory", (c) => c.queueHistory("emails")],
  ];
  for (const [name, call] of calls) {
    const m = mockFetch(() => problem(503, "unavailable", { "Retry-After": "0" }), () => json(200, control(false, null)));
    await call(client(m.fetch));
    assert.equal(m.calls.length, 2, `${name} was retried once after the 503`);
  }
});
