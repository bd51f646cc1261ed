// P-SDK-24: the `tenant` option (X-Tenant-Id on every request), ForbiddenError for 403, and
// a worker that keeps running when its poll or registration is refused (401/403). HTTP is a
// mocked fetch; isolation through the real server is test/integration/tenants.test.ts.
import { test, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { AuthError, ForbiddenError, Orch8Client, Orch8Error, Worker, isOutage, type Logger } from "../../src/index.js";
import { json, mockFetch } from "../helpers/mock-fetch.js";
import { batchAnswer, claimed, hangUntilAborted, item, routed, until, worker } from "../helpers/routed.js";

beforeEach(() => {
  delete process.env.ORCH8_TENANT;
});

const refusal = (status: 401 | 403, detail: string) =>
  json(status, { type: "about:blank", title: status === 401 ? "Unauthorized" : "Forbidden", status, detail, code: status === 401 ? "unauthorized" : "forbidden", errors: [] });

/** A logger that keeps the warnings. */
function recorder(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const none = () => {};
  return { warnings, debug: none, info: none, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
}

test("P-SDK-24: the worker sends X-Tenant-Id on registration, polls, heartbeats, results and deregistration", async () => {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 20, tasks: [] }),
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1 ? json(200, { tasks: [claimed("t1", 60_000)], next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
    "POST /workers/tasks/complete/batch": () => json(200, batchAnswer([item("t1")])),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, tenant: "team-a" });
  assert.equal(client.tenant, "team-a");
  const w = new Worker({ client, workerId: "w", handleSignals: false, heartbeatIntervalMs: 20, handlers: { h: () => held.then(() => "ok") } });
  const run = w.run();
  await until(() => m.count("POST /workers/w/heartbeat") >= 1, "a heartbeat while the task is held");
  release();
  await until(() => w.stats().tasks_completed === 1, "the completion");
  await w.stop();
  await run;
  const kinds = new Set(m.calls.map((c) => c.key));
  for (const k of ["POST /workers", "POST /workers/tasks/poll/batch", "POST /workers/w/heartbeat", "POST /workers/tasks/complete/batch", "DELETE /workers/w"]) {
    assert.ok(kinds.has(k), `${k} was sent`);
  }
  assert.deepEqual(new Set(m.calls.map((c) => c.headers.get("x-tenant-id"))), new Set(["team-a"]));
});

test("P-SDK-24: single calls carry the tenant; without one no header is sent", async () => {
  const m = mockFetch(() => json(200, { task_id: "t1", status: "failed", attempt: 1, attempts_left: 0, next_attempt_at: null, error_code: null }));
  await new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, tenant: "t1.prod_2-x" }).failTask("t1", { lease_id: "l1", error: "boom" });
  assert.equal(m.calls[0]!.headers.get("x-tenant-id"), "t1.prod_2-x");
  await new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }).failTask("t1", { lease_id: "l1", error: "boom" });
  assert.equal(m.calls[1]!.headers.get("x-tenant-id"), null);
});

test("P-SDK-24: the tenant falls back on ORCH8_TENANT; the option wins; empty is unset", async () => {
  const m = mockFetch(() => json(200, { tasks: [], next_poll_after_ms: 0 }));
  process.env.ORCH8_TENANT = "from-env";
  await new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }).pollTasks({ wait_ms: 0 });
  await new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, tenant: "given" }).pollTasks({ wait_ms: 0 });
  process.env.ORCH8_TENANT = "";
  await new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }).pollTasks({ wait_ms: 0 });
  assert.deepEqual(m.calls.map((c) => c.headers.get("x-tenant-id")), ["from-env", "given", null]);
});

test("P-SDK-24: a malformed tenant is refused with a TypeError when the client is built", () => {
  for (const bad of ["", "team a", "a".repeat(65), "tëam", "a/b", 7 as unknown as string]) {
    assert.throws(() => new Orch8Client({ tenant: bad }), TypeError, JSON.stringify(bad));
  }
  process.env.ORCH8_TENANT = "no spaces";
  assert.throws(() => new Orch8Client(), /tenant must match/);
  delete process.env.ORCH8_TENANT;
  assert.equal(new Orch8Client({ tenant: "a".repeat(64) }).tenant, "a".repeat(64));
});

test("P-SDK-24: 403 forbidden is ForbiddenError, never retried; a bare 403 maps by status", async () => {
  const m = mockFetch(() => refusal(403, 'key "p" (role producer) may not call getTask'));
  const err = await new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }).getTask("t1").catch((e: unknown) => e);
  assert.ok(err instanceof ForbiddenError && err instanceof Orch8Error);
  assert.equal(err.code, "forbidden");
  assert.equal(isOutage(err), false);
  assert.equal(m.calls.length, 1, "a call safe to repeat is still not repeated on 403");
  const bare = mockFetch(() => new Response("<html>Forbidden</html>", { status: 403, headers: { "Content-Type": "text/html" } }));
  await assert.rejects(new Orch8Client({ baseUrl: "http://h:1", fetch: bare.fetch }).getTask("t1"), ForbiddenError);
});

test("P-SDK-24: polls refused with 403 are logged with status, code and detail and backed off; fixed, the worker claims", async () => {
  let fixed = false;
  const detail = 'key "w" (role worker) may not poll queue "default"';
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 50, tasks: [] }),
    "POST /workers/tasks/poll/batch": (req, n) => {
      if (!fixed) return refusal(403, detail);
      return n <= 3 ? json(200, { tasks: [claimed("t1", 60_000)], next_poll_after_ms: 0 }) : hangUntilAborted(req, n);
    },
    "POST /workers/tasks/complete/batch": () => json(200, batchAnswer([item("t1")])),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const log = recorder();
  const w = new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }), workerId: "w", handleSignals: false, logger: log, handlers: { h: () => "ok" } });
  const run = w.run();
  await until(() => w.stats().poll_errors >= 2, "two refused polls");
  fixed = true; // the key fixed on the server (SIGHUP): no restart needed
  await until(() => w.stats().tasks_completed === 1, "the task claimed once the key works", 10_000);
  await w.stop();
  await run;
  const refusals = log.warnings.filter((l) => l.includes("poll refused, backing off ") && l.endsWith(`: HTTP 403 forbidden: ${detail}`));
  assert.ok(refusals.length >= 2, log.warnings.join("\n"));
  // P-SDK-9: 500 ms doubling with full jitter: the first wait is at most 500 ms, the second 1 s.
  const waits = refusals.map((l) => Number(/backing off (\d+) ms/.exec(l)![1]));
  assert.ok(waits[0]! <= 500 && waits[1]! <= 1000, String(waits));
});

test("P-SDK-24: a registration refused (401, then 403) is retried with the outage backoff; no poll before it succeeds", async () => {
  const refusals = [401, 403] as const;
  const errors: unknown[] = [];
  const m = routed({
    "POST /workers": (_req, n) => (n <= refusals.length ? refusal(refusals[n - 1]!, `${refusals[n - 1]} key`) : json(200, worker("w"))),
    "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 50, tasks: [] }),
    "POST /workers/tasks/poll/batch": hangUntilAborted,
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const log = recorder();
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }), workerId: "w", handleSignals: false, logger: log,
    hooks: { onError: (e) => errors.push(e.error) }, handlers: { h: () => "ok" },
  });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/poll/batch") >= 1, "polling after the third registration", 10_000);
  await w.stop();
  await run;
  assert.deepEqual(m.calls.slice(0, 3).map((c) => c.key), ["POST /workers", "POST /workers", "POST /workers"]);
  assert.ok(errors[0] instanceof AuthError && errors[1] instanceof ForbiddenError);
  const refused = log.warnings.filter((l) => l.startsWith("orch8: registration refused, retrying in "));
  assert.ok(refused.some((l) => l.endsWith(": HTTP 401 unauthorized: 401 key")), log.warnings.join("\n"));
  assert.ok(refused.some((l) => l.endsWith(": HTTP 403 forbidden: 403 key")), log.warnings.join("\n"));
});
