// P-RATE-1, P-RATE-4 on Orch8Client: the rate-limit operator calls send their method, path and
// body; enqueue and enqueueBatch send rate_limit_key; a held task's waiting says rate_limited.
import { test } from "node:test";
import assert from "node:assert/strict";
import { NotFoundError, Orch8Client, type RateLimit, type RateLimitList } from "../../src/index.js";
import { json, mockFetch, noContent, problem } from "../helpers/mock-fetch.js";

const limit: RateLimit = {
  key: "crm-api", limit: 10, period_ms: 1000, burst: 2, tokens: 2, next_token_at: null, held: 0,
  updated_at: "2026-11-27T10:00:00.000Z",
};

test("P-RATE-1: setRateLimit PUTs the settings, listRateLimits GETs them, deleteRateLimit DELETEs", async () => {
  const list: RateLimitList = { rate_limits: [limit] };
  const m = mockFetch(() => json(200, limit), () => json(200, limit), () => json(200, list), () => noContent());
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  const set = await client.setRateLimit("crm-api", { limit: 10, period_ms: 1000, burst: 2 });
  assert.deepEqual([set.key, set.burst, set.held], ["crm-api", 2, 0]);
  await client.setRateLimit("crm-api", { limit: 10, period_ms: 1000 }); // burst: the server's default
  const listed = await client.listRateLimits();
  assert.deepEqual(listed.rate_limits.map((r) => r.key), ["crm-api"]);
  await client.deleteRateLimit("crm-api");
  assert.deepEqual(
    m.calls.map((c) => [c.method, c.url.pathname, c.body]),
    [
      ["PUT", "/rate-limits/crm-api", { limit: 10, period_ms: 1000, burst: 2 }],
      ["PUT", "/rate-limits/crm-api", { limit: 10, period_ms: 1000 }],
      ["GET", "/rate-limits", undefined],
      ["DELETE", "/rate-limits/crm-api", undefined],
    ],
  );
});

test("P-RATE-4: removing a limit that is not there is a NotFoundError", async () => {
  const m = mockFetch(() => problem(404, "not_found"));
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  await assert.rejects(client.deleteRateLimit("nope"), NotFoundError);
});

test("P-RATE-1: enqueue and enqueueBatch send rate_limit_key; the Task reads it back", async () => {
  const task = { id: "t1", status: "pending", rate_limit_key: "crm-api" };
  const m = mockFetch(() => json(201, task), () => json(201, { tasks: [task] }), () => json(201, { id: "t2", status: "pending", rate_limit_key: null }));
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  const created = await client.enqueue({ handler_name: "sync_contacts", rate_limit_key: "crm-api" });
  assert.equal(created.rate_limit_key, "crm-api");
  await client.enqueueBatch([{ handler_name: "sync_contacts", rate_limit_key: "crm-api" }]);
  await client.enqueue({ handler_name: "sync_contacts" });
  assert.deepEqual(m.calls.map((c) => [c.method, c.url.pathname, c.body]), [
    ["POST", "/tasks", { handler_name: "sync_contacts", rate_limit_key: "crm-api" }],
    ["POST", "/tasks/batch", { tasks: [{ handler_name: "sync_contacts", rate_limit_key: "crm-api" }] }],
    ["POST", "/tasks", { handler_name: "sync_contacts" }],
  ]);
});

test("P-RATE-1: a held task's waiting says rate_limited until the next token", async () => {
  const waiting = { reason: "rate_limited", detail: "rate limit crm-api (10 per 1000 ms, burst 2): waiting for a token", until: "2026-11-27T10:00:00.100Z" };
  const m = mockFetch(() => json(200, { id: "t3", status: "pending", rate_limit_key: "crm-api", waiting }));
  const held = await new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }).getTask("t3");
  assert.deepEqual([held.status, held.rate_limit_key, held.waiting?.reason, held.waiting?.until], ["pending", "crm-api", "rate_limited", "2026-11-27T10:00:00.100Z"]);
});
