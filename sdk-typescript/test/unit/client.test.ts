// Request shapes, headers and the 204 answer of Orch8Client against a mocked fetch.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { OPERATIONS, Orch8Client, SDK_VERSION, SPEC_SHA256, SPEC_VERSION, USER_AGENT } from "../../src/index.js";
import { json, mockFetch, noContent } from "../helpers/mock-fetch.js";

const claimed = {
  id: "task_1", handler_name: "process_image", queue_name: "default", params: { w: 1 }, context: {},
  headers: {}, priority: 0, attempt: 1, max_attempts: 3,
  lease: { id: "lease_1", worker_id: "img-worker-1", attempt: 1, expires_at: "2026-11-21T10:31:00.000Z" },
  checkpoint: null, good_until: null, created_at: "2026-11-21T10:30:00.000Z",
  metadata: { attempt: 1, max_attempts: 3, created_at: "2026-11-21T10:30:00.000Z" },
};
const outcome = { task_id: "task_1", status: "completed", attempt: 1, attempts_left: 2, next_attempt_at: null, error_code: null };

test("pollTask sends the seed's body and returns the claimed task", async () => {
  const m = mockFetch(() => json(200, claimed));
  const client = new Orch8Client({ baseUrl: "http://h:1/", fetch: m.fetch });
  const task = await client.pollTask({ handler_names: ["process_image"], worker_id: "img-worker-1" });
  assert.equal(task?.id, "task_1");
  assert.equal(m.calls.length, 1);
  const c = m.calls[0]!;
  assert.equal(c.method, "POST");
  assert.equal(c.url.href, "http://h:1/workers/tasks/poll");
  assert.deepEqual(c.body, { handler_names: ["process_image"], worker_id: "img-worker-1" });
  assert.equal(c.headers.get("content-type"), "application/json");
  assert.equal(c.headers.get("user-agent"), `orch8-typescript/${SDK_VERSION}`);
  assert.equal(c.headers.get("authorization"), null);
});

test("pollTask resolves to null on 204 No Content (P-POLL-1)", async () => {
  const m = mockFetch(() => noContent());
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  assert.equal(await client.pollTask({ wait_ms: 0 }), null);
});

test("completeTask, failTask and heartbeat hit the seed paths with snake_case bodies", async () => {
  const m = mockFetch(
    () => json(200, outcome),
    () => json(200, { ...outcome, status: "scheduled" }),
    () => json(200, { task_id: "task_1", lease_id: "lease_1", lease_expires_at: "2026-11-21T10:32:00.000Z", cancel_requested: false }),
  );
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  const done = await client.completeTask("task_1", { output: { url: "x" } });
  assert.equal(done.status, "completed");
  const failed = await client.failTask("task_1", { error: "Out of memory", retryable: true });
  assert.equal(failed.status, "scheduled");
  const hb = await client.heartbeat("task_1");
  assert.equal(hb.cancel_requested, false);
  assert.deepEqual(m.calls.map((c) => `${c.method} ${c.url.pathname}`), [
    "POST /workers/tasks/task_1/complete",
    "POST /workers/tasks/task_1/fail",
    "POST /workers/tasks/task_1/heartbeat",
  ]);
  assert.deepEqual(m.calls[0]!.body, { output: { url: "x" } });
  assert.deepEqual(m.calls[1]!.body, { error: "Out of memory", retryable: true });
  assert.deepEqual(m.calls[2]!.body, {});
});

test("the API key becomes a bearer header (P-AUTH-1)", async () => {
  const m = mockFetch(() => json(200, { workers: [] }));
  const client = new Orch8Client({ baseUrl: "http://h:1", apiKey: "sekrit", fetch: m.fetch });
  await client.listWorkers({ state: "running" });
  assert.equal(m.calls[0]!.headers.get("authorization"), "Bearer sekrit");
  assert.equal(m.calls[0]!.url.search, "?state=running");
});

test("ORCH8_URL and ORCH8_API_KEY are read when options are omitted (P-SDK-1)", async () => {
  const saved = { url: process.env.ORCH8_URL, key: process.env.ORCH8_API_KEY };
  process.env.ORCH8_URL = "http://from-env:9";
  process.env.ORCH8_API_KEY = "env-key";
  try {
    const m = mockFetch(() => json(200, { tasks: [], next_cursor: null }));
    const client = new Orch8Client({ fetch: m.fetch });
    assert.equal(client.baseUrl, "http://from-env:9");
    await client.listTasks({ status: ["failed", "cancelled"], limit: 5 });
    assert.equal(m.calls[0]!.url.origin, "http://from-env:9");
    assert.equal(m.calls[0]!.url.search, "?status=failed&status=cancelled&limit=5");
    assert.equal(m.calls[0]!.headers.get("authorization"), "Bearer env-key");
  } finally {
    if (saved.url === undefined) delete process.env.ORCH8_URL; else process.env.ORCH8_URL = saved.url;
    if (saved.key === undefined) delete process.env.ORCH8_API_KEY; else process.env.ORCH8_API_KEY = saved.key;
  }
  const dflt = new Orch8Client({ fetch: mockFetch(() => noContent()).fetch });
  if (process.env.ORCH8_URL === undefined) assert.equal(dflt.baseUrl, "http://localhost:3001");
});

test("every method maps to its operation's method and path", async () => {
  const task = { id: "task_1" };
  const worker = { worker_id: "w1" };
  const m = mockFetch((req) => {
    if (req.url.pathname === "/tasks/batch") return json(201, { tasks: [task] });
    return json(200, req.url.pathname.startsWith("/workers/w1") || req.url.pathname === "/workers" && req.method === "POST" ? worker : task);
  });
  const c = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  await c.enqueue({ handler_name: "a" });
  assert.deepEqual(await c.enqueueBatch([{ handler_name: "a" }, { handler_name: "b", priority: -1 }]), [task]);
  await c.getTask("task_1");
  await c.cancelTask("task_1", { reason: "r" });
  await c.retryTask("task_1", { delay_ms: 0 });
  await c.completeTaskManually("task_1", { output: { approved: true }, reason: "by hand" });
  await c.failTaskManually("task_1", { error: "account closed" });
  await c.releaseTask("task_1", { lease_id: "lease_1" });
  await c.listTaskAttempts("task_1");
  await c.pollTasks({ batch_size: 4, wait_ms: 0 });
  await c.completeTasks([{ task_id: "task_1", output: 1 }]);
  await c.failTasks([{ task_id: "task_1", error: "e" }]);
  await c.registerWorker({ worker_id: "w1", handlers: ["a"] });
  await c.heartbeatWorker("w1", { active_task_ids: ["task_1"] });
  await c.getWorker("w1");
  await c.quietWorker("w1");
  await c.resumeWorker("w1");
  await c.terminateWorker("w1");
  await c.deregisterWorker("w1");
  await c.queueStats({ queue_name: "q" });
  await c.serverInfo();
  assert.deepEqual(m.calls.map((r) => `${r.method} ${r.url.pathname}${r.url.search}`), [
    "POST /tasks", "POST /tasks/batch", "GET /tasks/task_1", "POST /tasks/task_1/cancel",
    "POST /tasks/task_1/retry", "POST /tasks/task_1/complete", "POST /tasks/task_1/fail", "POST /workers/tasks/task_1/release", "GET /tasks/task_1/attempts",
    "POST /workers/tasks/poll/batch", "POST /workers/tasks/complete/batch", "POST /workers/tasks/fail/batch",
    "POST /workers", "POST /workers/w1/heartbeat", "GET /workers/w1", "POST /workers/w1/quiet",
    "POST /workers/w1/resume", "POST /workers/w1/terminate", "DELETE /workers/w1", "GET /queues?queue_name=q",
    "GET /info",
  ]);
  assert.deepEqual(m.calls[1]!.body, { tasks: [{ handler_name: "a" }, { handler_name: "b", priority: -1 }] });
  assert.deepEqual(m.calls[3]!.body, { reason: "r" });
  assert.deepEqual(m.calls[5]!.body, { output: { approved: true }, reason: "by hand" });
  assert.deepEqual(m.calls[6]!.body, { error: "account closed" });
  assert.deepEqual(m.calls[10]!.body, { items: [{ task_id: "task_1", output: 1 }] });
  assert.deepEqual(m.calls[13]!.body, { active_task_ids: ["task_1"] });
});

test("path parameters are percent-encoded", async () => {
  const m = mockFetch(() => json(200, { worker_id: "a b" }));
  await new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }).getWorker("host:1@x");
  assert.equal(m.calls[0]!.url.pathname, "/workers/host%3A1%40x");
});

test("the generated spec constants match ../openapi.yaml", async () => {
  const { createHash } = await import("node:crypto");
  const bytes = readFileSync(new URL("../../../openapi.yaml", import.meta.url));
  assert.equal(SPEC_SHA256, createHash("sha256").update(bytes).digest("hex"));
  assert.match(bytes.toString("utf8"), new RegExp(`\\n  version: ${SPEC_VERSION.replace(/\./g, "\\.")}\\n`));
  const client = new Orch8Client({ baseUrl: "http://h:1" });
  assert.equal(client.spec.sha256, SPEC_SHA256);
});

test("SDK_VERSION and the user agent follow package.json", () => {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  assert.equal(SDK_VERSION, pkg.version);
  assert.equal(USER_AGENT, `orch8-typescript/${pkg.version}`);
});

test("one client method per operation, with the spec's call policy (P-SDK-2)", async () => {
  const { parse } = await import("yaml");
  const spec = parse(readFileSync(new URL("../../../openapi.yaml", import.meta.url), "utf8"));
  const fromSpec: Record<string, unknown> = {};
  for (const [path, item] of Object.entries<Record<string, Record<string, unknown>>>(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      fromSpec[op["x-orch8-method"] as string] = {
        method: method.toUpperCase(), path, retry: op["x-orch8-retry"], longPoll: op["x-orch8-long-poll"] === true,
      };
    }
  }
  const table = Object.fromEntries(Object.entries(OPERATIONS).map(([name, op]) => [name, { method: op.method, path: op.path, retry: op.retry, longPoll: op.longPoll }]));
  assert.deepEqual(table, fromSpec);
  const c = new Orch8Client({ baseUrl: "http://h:1" }) as unknown as Record<string, unknown>;
  for (const name of Object.keys(fromSpec)) assert.equal(typeof c[name], "function", `client.${name}`);
  // Names kept from before the generator, for existing callers.
  for (const alias of ["heartbeat", "ready"]) assert.equal(typeof c[alias], "function", `client.${alias}`);
});

test("health, readiness, metrics and server info each have their call", async () => {
  const m = mockFetch((req) => req.url.pathname === "/metrics"
    ? new Response("# TYPE orch8_up gauge\norch8_up 1\n", { status: 200, headers: { "Content-Type": "text/plain" } })
    : json(200, { status: "ok", checks: {} }));
  const c = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  assert.deepEqual(await c.healthLive(), { status: "ok", checks: {} });
  assert.deepEqual(await c.healthReady(), { status: "ok", checks: {} });
  assert.deepEqual(await c.ready(), { status: "ok", checks: {} });
  assert.match(await c.metrics(), /^orch8_up 1$/m);
  assert.deepEqual(m.calls.map((r) => `${r.method} ${r.url.pathname}`), ["GET /health/live", "GET /health/ready", "GET /health/ready", "GET /metrics"]);
});
