// P-SDK-25: waitInstance / waitTask against a mocked fetch: rounds of wait_ms, final
// states returned (not thrown), outages ridden out, WaitTimeoutError carrying the last state.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DEFAULT_WAIT_TIMEOUT_MS, NotFoundError, Orch8Client, Orch8Error, UnavailableError, WAIT_ROUND_MS, WaitTimeoutError,
} from "../../src/index.js";
import { waitUntilFinal } from "../../src/wait.js";
import { json, mockFetch, problem, refused } from "../helpers/mock-fetch.js";

const instance = (status: string) => ({
  id: "inst_1", sequence: "thumbnail", version: 1, status, input: {}, output: status === "completed" ? { url: "u" } : null,
  error: null, steps: [], created_at: "2026-11-24T05:00:00Z", updated_at: "2026-11-24T05:00:00Z", finished_at: null,
});
const task = (status: string) => ({ id: "task_1", handler_name: "h", queue_name: "default", status, params: {} });
const waits = (calls: { url: URL }[]) => calls.map((c) => Number(c.url.searchParams.get("wait_ms")));

test("P-SDK-25 waitInstance long-polls GET /instances/{id}?wait_ms=30000 in rounds until final", async () => {
  const m = mockFetch(() => json(200, instance("running")), () => json(200, instance("running")), () => json(200, instance("completed")));
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  const done = await client.waitInstance("inst_1");
  assert.equal(done.status, "completed");
  assert.deepEqual(done.output, { url: "u" });
  assert.equal(m.calls.length, 3);
  for (const c of m.calls) {
    assert.equal(c.method, "GET");
    assert.equal(c.url.pathname, "/instances/inst_1");
  }
  assert.deepEqual(waits(m.calls), [WAIT_ROUND_MS, WAIT_ROUND_MS, WAIT_ROUND_MS]);
});

test("P-SDK-25 the default timeout is 5 minutes, spent in rounds of at most 30000 ms", async () => {
  assert.equal(DEFAULT_WAIT_TIMEOUT_MS, 300_000);
  let clock = 0;
  const asked: number[] = [];
  const err = await waitUntilFinal("instance inst_1", async (waitMs) => {
    asked.push(waitMs);
    clock += waitMs; // the server held the request for the whole round
    return { status: "running", n: asked.length };
  }, (s) => s === "completed", {}, () => clock).catch((e: unknown) => e);
  assert.ok(err instanceof WaitTimeoutError);
  assert.deepEqual(asked, Array(10).fill(30_000));
  assert.deepEqual(err.lastState, { status: "running", n: 10 });
});

for (const timeoutMs of [0, -1]) {
  test(`P-SDK-25 a timeout of ${timeoutMs} means the default 5 minutes`, async () => {
    let clock = 0;
    const asked: number[] = [];
    const err = await waitUntilFinal("task t", async (waitMs) => {
      asked.push(waitMs);
      clock += waitMs;
      return { status: "running" };
    }, () => false, { timeoutMs }, () => clock).catch((e: unknown) => e);
    assert.ok(err instanceof WaitTimeoutError);
    assert.equal(err.timeoutMs, DEFAULT_WAIT_TIMEOUT_MS);
    assert.deepEqual(asked, Array(10).fill(30_000));
  });
}

test("P-SDK-25 a round never asks for more than what is left of the timeout", async () => {
  let clock = 0;
  const asked: number[] = [];
  await assert.rejects(waitUntilFinal("task t", async (waitMs) => {
    asked.push(waitMs);
    clock += waitMs;
    return { status: "running" };
  }, () => false, { timeoutMs: 45_000 }, () => clock), WaitTimeoutError);
  assert.deepEqual(asked, [30_000, 15_000]);
});

test("P-SDK-25 waitInstance throws WaitTimeoutError carrying the last state seen", async () => {
  const m = mockFetch(() => json(200, instance("running")));
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  const err = await client.waitInstance("inst_1", { timeoutMs: 30 }).catch((e: unknown) => e);
  assert.ok(err instanceof WaitTimeoutError, String(err));
  assert.ok(err instanceof Orch8Error);
  assert.equal(err.code, "wait_timeout");
  assert.equal(err.timeoutMs, 30);
  assert.deepEqual(err.lastState, instance("running"));
  assert.ok(waits(m.calls).every((w) => w <= 30), `wait_ms within the timeout: ${waits(m.calls)}`);
});

for (const status of ["failed", "cancelled"]) {
  test(`P-SDK-25 waitInstance returns a ${status} instance as final, not as an error`, async () => {
    const m = mockFetch(() => json(200, instance("running")), () => json(200, instance(status)));
    const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
    assert.equal((await client.waitInstance("inst_1", { timeoutMs: 5_000 })).status, status);
    assert.equal(m.calls.length, 2);
  });
}

for (const status of ["completed", "failed", "cancelled", "expired"]) {
  test(`P-SDK-25 waitTask long-polls GET /tasks/{id}?wait_ms= and returns a ${status} task`, async () => {
    const m = mockFetch(() => json(200, task("running")), () => json(200, task("pending")), () => json(200, task(status)));
    const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
    assert.equal((await client.waitTask("task_1", { timeoutMs: 5_000 })).status, status);
    assert.deepEqual(m.calls.map((c) => c.url.pathname), ["/tasks/task_1", "/tasks/task_1", "/tasks/task_1"]);
    const asked = waits(m.calls);
    assert.equal(asked[0], 5_000, "the first round asks for the whole (short) timeout");
    assert.ok(asked.every((w) => w > 0 && w <= 5_000), `rounds within the timeout: ${asked}`);
  });
}

test("P-SDK-25 the first round asks for the whole timeout even when the clock ticks before it", async () => {
  let t = 1_000_000;
  const asked: number[] = [];
  const round = async (waitMs: number) => {
    asked.push(waitMs);
    return { status: asked.length === 1 ? "running" : "completed" };
  };
  const isFinal = (s: string) => s === "completed";
  assert.equal((await waitUntilFinal("task t", round, isFinal, { timeoutMs: 5_000 }, () => t++)).status, "completed");
  assert.equal(asked[0], 5_000, `rounds asked ${asked}`);
});

test("P-SDK-25 an outage during a wait is ridden out (P-SDK-2), past the client's own retries", async () => {
  // maxRetries 0: the transport gives up at once, so only the helper can ride this out.
  const m = mockFetch(() => problem(503, "unavailable"), refused, () => json(200, instance("running")), () => json(200, instance("completed")));
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 });
  const done = await client.waitInstance("inst_1", { timeoutMs: 20_000 });
  assert.equal(done.status, "completed");
  assert.equal(m.calls.length, 4);
});

test("P-SDK-25 an outage lasting past the timeout ends in WaitTimeoutError with no last state", async () => {
  const m = mockFetch(refused);
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 });
  const err = await client.waitTask("task_1", { timeoutMs: 300 }).catch((e: unknown) => e);
  assert.ok(err instanceof WaitTimeoutError, String(err));
  assert.equal(err.lastState, undefined);
  assert.ok(err.cause instanceof UnavailableError);
  assert.ok(m.calls.length >= 2, "retried before giving up");
});

test("P-SDK-25 a non-outage error (404) is thrown at once, not waited out", async () => {
  const m = mockFetch(() => problem(404, "not_found"));
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  await assert.rejects(client.waitInstance("inst_nope"), NotFoundError);
  assert.equal(m.calls.length, 1);
});

test("P-SDK-25 an aborted wait rejects with the signal's reason", async () => {
  const m = mockFetch(() => json(200, instance("running")));
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  const ctl = new AbortController();
  const reason = new Error("stop waiting");
  const waiting = client.waitInstance("inst_1", { signal: ctl.signal });
  setTimeout(() => ctl.abort(reason), 20);
  await assert.rejects(waiting, (e) => e === reason);
});

test("P-SDK-25 getTask(id) and getTask(id, call) keep their signature and send no wait_ms", async () => {
  const m = mockFetch(() => json(200, task("pending")));
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  assert.equal((await client.getTask("task_1")).status, "pending");
  assert.equal((await client.getTask("task_1", { timeoutMs: 5_000 })).status, "pending");
  for (const c of m.calls) assert.equal(c.url.search, "");
});

test("the eight workflow operations send their documented requests", async () => {
  const m = mockFetch(() => json(200, instance("running")));
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  await client.defineSequence({ name: "thumbnail", steps: [{ id: "resize", handler: "resize" }] });
  await client.listSequences({ limit: 5 });
  await client.getSequence("thumbnail");
  await client.startInstance({ sequence: "thumbnail", input: { a: 1 }, idempotency_key: "k" });
  await client.listInstances({ status: ["failed"] });
  await client.getInstance("inst_1");
  await client.cancelInstance("inst_1", { reason: "no longer needed" });
  await client.retryInstance("inst_1");
  assert.deepEqual(m.calls.map((c) => `${c.method} ${c.url.pathname}${c.url.search}`), [
    "POST /sequences", "GET /sequences?limit=5", "GET /sequences/thumbnail", "POST /instances",
    "GET /instances?status=failed", "GET /instances/inst_1", "POST /instances/inst_1/cancel", "POST /instances/inst_1/retry",
  ]);
  assert.deepEqual(m.calls[3]!.body, { sequence: "thumbnail", input: { a: 1 }, idempotency_key: "k" });
});
