// Problem codes map to typed errors (docs/protocol.md section 12); safe retries (P-SDK-2).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  AuthError, ConflictError, ForbiddenError, LeaseLostError, NotFoundError, Orch8Client, Orch8Error, RateLimitedError,
  TaskCancelledError, UnavailableError, ValidationError,
} from "../../src/index.js";
import { Backoff, parseRetryAfter } from "../../src/backoff.js";
import { errorFromResponse } from "../../src/errors.js";
import { CLIENT_RETRY_BASE_MS, CLIENT_RETRY_CAP_MS } from "../../src/generated/constants.js";
import { RETRY_AFTER_BUDGET_MS, Transport } from "../../src/transport.js";
import { isOutage, jitterRetryAfter, outageWait } from "../../src/outage.js";
import { json, mockFetch, problem, refused } from "../helpers/mock-fetch.js";

const client = (fetch: (r: Request) => Promise<Response>, extra = {}) =>
  new Orch8Client({ baseUrl: "http://h:1", fetch, ...extra });

const TABLE: Array<[number, string, new (...a: never[]) => Orch8Error]> = [
  [400, "malformed_json", ValidationError],
  [400, "payload_too_deep", ValidationError], // P-ERR-5
  [400, "unsupported_value", ValidationError], // P-ERR-5
  [408, "request_timeout", UnavailableError], // P-HTTP-2: an outage
  [431, "headers_too_large", ValidationError], // P-HTTP-1
  [401, "unauthorized", AuthError],
  [403, "forbidden", ForbiddenError], // P-SDK-24: never retried
  [404, "not_found", NotFoundError],
  [405, "method_not_allowed", Orch8Error],
  [409, "lease_lost", LeaseLostError],
  [409, "task_cancelled", TaskCancelledError],
  [409, "invalid_state", ConflictError],
  [409, "clock_not_controllable", ConflictError], // P-CLOCK-1
  [413, "payload_too_large", ValidationError],
  [415, "unsupported_media_type", ValidationError],
  [422, "validation_error", ValidationError],
  [500, "internal", Orch8Error],
];
// P-SDK-16: these statuses are outages, so a safe call is retried before they surface.
const OUTAGES = new Set([408, 429, 500, 502, 503, 504]);

for (const [status, code, cls] of TABLE) {
  test(`${status} ${code} rejects with ${cls.name}`, async () => {
    const m = mockFetch(() => problem(status, code));
    const err = await client(m.fetch).getTask("task_1").then(() => null, (e: unknown) => e);
    assert.ok(err instanceof cls, `got ${String(err)}`);
    const expectedCalls = OUTAGES.has(status) ? 4 : 1;
    assert.equal((err as Error).constructor, cls, "the most specific class, not a parent");
    assert.ok(err instanceof Orch8Error);
    assert.equal((err as Orch8Error).code, code);
    assert.equal((err as Orch8Error).status, status);
    assert.equal((err as Orch8Error).problem?.detail, `detail of ${code}`);
    assert.equal(m.calls.length, expectedCalls, "outages are retried (1 + 3), other answers are not");
  });
}

test("one outage classifier: connection errors, 408, 429, 500, 502, 503, 504 and nothing else (P-SDK-16)", () => {
  for (let status = 400; status < 600; status++) {
    const err = errorFromResponse(status, { type: "x", title: "x", status, code: "c", errors: [] });
    assert.equal(isOutage(err), OUTAGES.has(status), `status ${status}`);
  }
  assert.equal(isOutage(new UnavailableError("refused", { status: 0, code: "connection_error" })), true);
  assert.equal(isOutage(new Error("plain")), false);
});

test("Retry-After replaces the computed wait, plus 0-10% jitter; the worker caps it at 60 s (P-SDK-16)", () => {
  assert.equal(jitterRetryAfter(1000, () => 0), 1000);
  assert.equal(jitterRetryAfter(1000, () => 0.999), 1100);
  const ra = (ms: number) => new RateLimitedError("slow down", { status: 429, code: "rate_limited", retryAfterMs: ms });
  assert.equal(outageWait(ra(2000), 123, () => 0.5), 2100);
  assert.equal(outageWait(ra(600_000), 123, () => 0), 60_000);
  assert.equal(outageWait(new UnavailableError("x", { status: 503, code: "unavailable" }), 123), 123);
});

test("a Retry-After over 30 s is not waited out by the client: the error surfaces with it (P-SDK-16)", async () => {
  const m = mockFetch(() => problem(503, "unavailable", { "Retry-After": "31" }), () => json(200, { id: "t" }));
  const started = Date.now();
  const err = await client(m.fetch).getTask("t").catch((e: unknown) => e);
  assert.ok(err instanceof UnavailableError);
  assert.equal(err.retryAfterMs, 31_000);
  assert.equal(m.calls.length, 1);
  assert.ok(Date.now() - started < 1000);
});

test("lease_lost and task_cancelled are not ConflictError (same as the other SDKs' table)", async () => {
  const m = mockFetch(() => problem(409, "lease_lost"));
  const err = await client(m.fetch).completeTask("t", {}).catch((e: unknown) => e);
  assert.ok(err instanceof LeaseLostError);
  assert.ok(!(err instanceof ConflictError));
});

test("validation field errors are exposed with their JSON pointers (P-ERR-2)", async () => {
  const m = mockFetch(() => json(422, {
    type: "urn:orch8:problem:validation_error", title: "Validation failed", status: 422, detail: "1 field is invalid",
    code: "validation_error", errors: [{ pointer: "/tasks/0/priority", detail: "must be integer" }],
  }));
  const err = await client(m.fetch).enqueueBatch([{ handler_name: "a" }]).catch((e: unknown) => e);
  assert.ok(err instanceof ValidationError);
  assert.deepEqual(err.errors, [{ pointer: "/tasks/0/priority", detail: "must be integer" }]);
});

test("answers without a problem body map by status: 408 UnavailableError, 431 ValidationError", () => {
  assert.equal(errorFromResponse(408, "slow").constructor, UnavailableError);
  assert.equal(errorFromResponse(431, "").constructor, ValidationError);
  assert.equal(errorFromResponse(431, "").code, "http_431");
});

test("a non-problem 502 from a proxy maps by status to UnavailableError", async () => {
  const m = mockFetch(() => new Response("<html>bad gateway</html>", { status: 502 }));
  const err = await client(m.fetch, { maxRetries: 0 }).getTask("t").catch((e: unknown) => e);
  assert.ok(err instanceof UnavailableError);
  assert.equal(err.code, "http_502");
});

test("a safe call is retried on 503 and honours Retry-After (P-SDK-2)", async () => {
  const m = mockFetch(() => problem(503, "unavailable", { "Retry-After": "0" }), () => json(200, { id: "t" }));
  const task = await client(m.fetch).getTask("t");
  assert.equal(task.id, "t");
  assert.equal(m.calls.length, 2);
});

test("429 rate_limited is retried, then surfaces as RateLimitedError with retryAfterMs", async () => {
  const m = mockFetch(() => problem(429, "rate_limited", { "Retry-After": "0" }));
  const err = await client(m.fetch).completeTask("t", { output: 1 }).catch((e: unknown) => e);
  assert.ok(err instanceof RateLimitedError);
  assert.equal(err.retryAfterMs, 0);
  assert.equal(m.calls.length, 4, "1 try + 3 retries");
});

test("maxRetries bounds the retries", async () => {
  const m = mockFetch(() => problem(503, "unavailable", { "Retry-After": "0" }));
  await assert.rejects(client(m.fetch, { maxRetries: 1 }).heartbeat("t"), UnavailableError);
  assert.equal(m.calls.length, 2);
});

for (const [name, call] of [
  ["pollTask", (c: Orch8Client) => c.pollTask({ wait_ms: 0 })],
  ["pollTasks", (c: Orch8Client) => c.pollTasks({ wait_ms: 0 })],
  ["enqueue without idempotency_key", (c: Orch8Client) => c.enqueue({ handler_name: "a" })],
  ["enqueueBatch with a keyless task", (c: Orch8Client) => c.enqueueBatch([{ handler_name: "a", idempotency_key: "k" }, { handler_name: "b" }])],
  ["cancelTask", (c: Orch8Client) => c.cancelTask("t")],
  ["retryTask", (c: Orch8Client) => c.retryTask("t")],
  ["completeTaskManually", (c: Orch8Client) => c.completeTaskManually("t")],
] as const) {
  test(`${name} is never retried by the client (P-SDK-2)`, async () => {
    const m = mockFetch(() => problem(503, "unavailable", { "Retry-After": "0" }), () => json(200, {}));
    await assert.rejects(call(client(m.fetch)), UnavailableError);
    assert.equal(m.calls.length, 1);
  });
}

test("enqueue with an idempotency_key is retried", async () => {
  const m = mockFetch(() => problem(503, "unavailable", { "Retry-After": "0" }), () => json(201, { id: "t" }));
  assert.equal((await client(m.fetch).enqueue({ handler_name: "a", idempotency_key: "k1" })).id, "t");
  assert.equal(m.calls.length, 2);
});

test("P-WF-14: startInstances is retried only when every item has an idempotency_key", async () => {
  const started = () => json(201, { instances: [] });
  const m = mockFetch(() => problem(503, "unavailable", { "Retry-After": "0" }), started);
  await client(m.fetch).startInstances([{ sequence: "s", idempotency_key: "a" }, { sequence: "s", idempotency_key: "b" }]);
  assert.equal(m.calls.length, 2);
  for (const items of [[{ sequence: "s", idempotency_key: "a" }, { sequence: "s" }], [{ sequence: "s", idempotency_key: "" }], []]) {
    const once = mockFetch(() => problem(503, "unavailable", { "Retry-After": "0" }), started);
    const err = await client(once.fetch).startInstances(items).catch((e: unknown) => e);
    assert.ok(err instanceof UnavailableError, JSON.stringify(items));
    assert.equal(once.calls.length, 1, JSON.stringify(items));
  }
});

test("a refused connection is UnavailableError with code connection_error, retried when safe", async () => {
  const m = mockFetch(refused, () => json(200, { id: "t" }));
  assert.equal((await client(m.fetch).getTask("t")).id, "t");
  assert.equal(m.calls.length, 2);
  const m2 = mockFetch(refused);
  const err = await client(m2.fetch, { maxRetries: 0 }).getTask("t").catch((e: unknown) => e);
  assert.ok(err instanceof UnavailableError);
  assert.equal(err.code, "connection_error");
  assert.equal(err.status, 0);
});

test("P-SDK-22: a refused connection's message names the server URL and the innermost cause", async () => {
  const err = await client(mockFetch(refused).fetch, { maxRetries: 0 }).getTask("t").catch((e: unknown) => e);
  assert.ok(err instanceof UnavailableError);
  assert.match(err.message, /http:\/\/h:1/);
  assert.match(err.message, /ECONNREFUSED/);
  assert.doesNotMatch(err.message, /fetch failed/);
});

test("a request that outlives timeoutMs fails with connection_error", async () => {
  const hang = (req: { signal: AbortSignal }) => new Promise<Response>((_, reject) => {
    req.signal.addEventListener("abort", () => reject(req.signal.reason));
  });
  const m = mockFetch(hang);
  const started = Date.now();
  const err = await client(m.fetch, { timeoutMs: 100, maxRetries: 0 }).getTask("t").catch((e: unknown) => e);
  assert.ok(err instanceof UnavailableError, String(err));
  assert.equal(err.code, "connection_error");
  assert.match(err.message, /timed out \(no answer within 100 ms\)/);
  assert.ok(Date.now() - started < 2000);
});

test("a long-poll's timeout is its wait_ms + 10 s (P-SDK-1)", async () => {
  const m = mockFetch((req) => new Promise<Response>((resolve) => {
    // Still open after the client's 50 ms default timeout: proves the long-poll got more.
    setTimeout(() => resolve(new Response(null, { status: 204 })), 150);
    req.signal.addEventListener("abort", () => resolve(new Response("aborted", { status: 599 })));
  }));
  const c = client(m.fetch, { timeoutMs: 50, maxRetries: 0 });
  assert.equal(await c.pollTask({ wait_ms: 0 }), null);
});

test("the caller's abort rejects at once with its reason and is not retried", async () => {
  const ctl = new AbortController();
  const m = mockFetch((req) => new Promise<Response>((_, reject) => {
    req.signal.addEventListener("abort", () => reject(req.signal.reason));
  }));
  const p = client(m.fetch).pollTasks({ wait_ms: 30000 }, { signal: ctl.signal });
  setTimeout(() => ctl.abort(new Error("shutting down")), 20);
  await assert.rejects(p, /shutting down/);
  assert.equal(m.calls.length, 1);
});

test("Backoff draws full jitter under a doubling, capped ceiling", () => {
  const hi = new Backoff(200, 5000, () => 0.999999);
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map(() => hi.next()), [199, 399, 799, 1599, 3199, 4999, 4999]);
  const lo = new Backoff(500, 30000, () => 0);
  assert.equal(lo.next(), 0);
  hi.reset();
  assert.equal(hi.ceiling(), 200);
});

test("parseRetryAfter reads seconds and HTTP dates", () => {
  assert.equal(parseRetryAfter("2"), 2000);
  assert.equal(parseRetryAfter(null), undefined);
  assert.equal(parseRetryAfter("Thu, 01 Jan 1970 00:00:05 GMT", 1000), 4000);
  assert.equal(parseRetryAfter("soon"), undefined);
});

/** A Transport on a scripted fetch whose waits are recorded, not slept (P-SDK-2 budget). */
function recordingTransport(fetch: (r: Request) => Promise<Response>, maxRetries = 3) {
  const waits: number[] = [];
  const t = new Transport({
    baseUrl: "http://h:1", timeoutMs: 1000, maxRetries, fetch,
    sleep: async (ms) => { waits.push(ms); },
  });
  const enqueue = () => t.call("enqueue", true, undefined, (signal) =>
    t.send("POST", "/tasks", { body: { handler_name: "a", idempotency_key: "k" }, parseAs: "json", signal }));
  return { waits, enqueue };
}

test("P-SDK-2: answers with Retry-After are retried past 3 retries (429 Retry-After: 1 five times, then 201)", async () => {
  const flood = () => problem(429, "rate_limited", { "Retry-After": "1" });
  const m = mockFetch(flood, flood, flood, flood, flood, () => json(201, { id: "t" }));
  const r = recordingTransport(m.fetch);
  const answer = await r.enqueue();
  assert.equal(answer.status, 201);
  assert.equal(m.calls.length, 6);
  assert.equal(r.waits.length, 5);
  for (const w of r.waits) assert.ok(w >= 1000 && w <= 1100, `waited ${w} ms: Retry-After + 0-10%`);
});

test("P-SDK-2: a sustained 429 Retry-After: 1 is retried until the waits would pass 30 s, then surfaces", async () => {
  const m = mockFetch(() => problem(429, "rate_limited", { "Retry-After": "1" }));
  const r = recordingTransport(m.fetch);
  const err = await r.enqueue().catch((e: unknown) => e);
  assert.ok(err instanceof RateLimitedError);
  // The budget counts the delays the server gave (30 x 1 s), not our 0-10% jitter.
  assert.equal(r.waits.length, RETRY_AFTER_BUDGET_MS / 1000, `${r.waits.length} retries`);
  for (const w of r.waits) assert.ok(w >= 1000 && w <= 1100, `waited ${w} ms: Retry-After + 0-10%`);
  assert.equal(m.calls.length, r.waits.length + 1);
});

test("P-SDK-2: a single Retry-After: 30 is waited (the budget is the server's delays, as in Python and Go)", async () => {
  const m = mockFetch(() => problem(429, "rate_limited", { "Retry-After": "30" }), () => json(201, { id: "t" }));
  const r = recordingTransport(m.fetch);
  const answer = await r.enqueue();
  assert.equal(answer.status, 201);
  assert.equal(r.waits.length, 1);
});

test("P-SDK-2: Retry-After: 0 gets the computed backoff within the 3 plain retries", async (t) => {
  // The backoff's full jitter draws from [0, ceiling], so a draw of 0 is a right answer:
  // the draw is pinned to the middle, and the waits must be half of each doubling ceiling.
  t.mock.method(Math, "random", () => 0.5);
  const m = mockFetch(() => problem(503, "unavailable", { "Retry-After": "0" }));
  const r = recordingTransport(m.fetch);
  await assert.rejects(r.enqueue(), UnavailableError);
  assert.equal(m.calls.length, 4);
  const ceilings = [0, 1, 2].map((i) => Math.min(CLIENT_RETRY_CAP_MS, CLIENT_RETRY_BASE_MS * 2 ** i));
  assert.deepEqual(r.waits, ceilings.map((c) => Math.floor(c / 2)), `waits ${r.waits}`);
});

test("P-SDK-2: outages without Retry-After keep the 3-retry limit; maxRetries 0 retries nothing", async () => {
  const m = mockFetch(() => problem(503, "unavailable"));
  const r = recordingTransport(m.fetch);
  await assert.rejects(r.enqueue(), UnavailableError);
  assert.equal(m.calls.length, 4);
  const m0 = mockFetch(() => problem(429, "rate_limited", { "Retry-After": "1" }));
  await assert.rejects(recordingTransport(m0.fetch, 0).enqueue(), RateLimitedError);
  assert.equal(m0.calls.length, 1);
});

for (const bad of ["127.0.0.1:3001", "localhost", "localhost:3001", "ftp://x", "", "http://", "http:host", "/relative"]) {
  test(`P-SDK-1: the base URL ${JSON.stringify(bad)} is refused with a TypeError naming it, before any request`, () => {
    const m = mockFetch(() => json(200, {}));
    assert.throws(() => new Orch8Client({ baseUrl: bad, fetch: m.fetch }), (e: unknown) =>
      e instanceof TypeError && e.message.includes(JSON.stringify(bad)) && /P-SDK-1/.test(e.message));
    assert.equal(m.calls.length, 0);
  });
}

test("P-SDK-1: http and https URLs with a host are accepted (trailing slashes dropped); ORCH8_URL is checked too", () => {
  assert.equal(new Orch8Client({ baseUrl: "https://orch8.example.com/" }).baseUrl, "https://orch8.example.com");
  assert.equal(new Orch8Client({ baseUrl: "http://127.0.0.1:3001" }).baseUrl, "http://127.0.0.1:3001");
  const saved = process.env.ORCH8_URL;
  try {
    process.env.ORCH8_URL = "127.0.0.1:3001";
    assert.throws(() => new Orch8Client(), /ORCH8_URL .*"127\.0\.0\.1:3001"/);
    process.env.ORCH8_URL = "";
    assert.equal(new Orch8Client().baseUrl, "http://localhost:3001", "an empty ORCH8_URL counts as unset");
  } finally {
    if (saved === undefined) delete process.env.ORCH8_URL;
    else process.env.ORCH8_URL = saved;
  }
});
