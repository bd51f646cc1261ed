// P-KEY-1 on Orch8Client: enqueue and enqueueBatch send concurrency_key / max_concurrency as
// given, a Task reads them back, and a held task's waiting says concurrency_key with its slots.
// P-KEY-7: the same for startInstance and an Instance.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Orch8Client } from "../../src/index.js";
import { json, mockFetch } from "../helpers/mock-fetch.js";

test("P-KEY-1: enqueue and enqueueBatch send the key and its limit; the Task reads them back", async () => {
  const task = { id: "t1", status: "pending", concurrency_key: "customer-42", max_concurrency: 2 };
  const m = mockFetch(() => json(201, task), () => json(201, { tasks: [task] }));
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  const created = await client.enqueue({ handler_name: "sync_invoices", concurrency_key: "customer-42", max_concurrency: 2 });
  assert.deepEqual([created.concurrency_key, created.max_concurrency], ["customer-42", 2]);
  await client.enqueueBatch([{ handler_name: "sync_invoices", concurrency_key: "customer-7" }]);
  assert.deepEqual(m.calls[0]!.body, { handler_name: "sync_invoices", concurrency_key: "customer-42", max_concurrency: 2 });
  // Without max_concurrency none is sent: the server's default is 1.
  assert.deepEqual(m.calls[1]!.body, { tasks: [{ handler_name: "sync_invoices", concurrency_key: "customer-7" }] });
});

test("P-KEY-1: a held task's waiting says concurrency_key with the slots taken and the cap", async () => {
  const waiting = { reason: "concurrency_key", detail: "concurrency key customer-42 has 2 tasks in slots, its cap", running: 2, cap: 2 };
  const m = mockFetch(() => json(200, { id: "t2", status: "pending", concurrency_key: "customer-42", max_concurrency: 2, waiting }));
  const held = await new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }).getTask("t2");
  assert.equal(m.calls[0]!.url.pathname, "/tasks/t2");
  assert.deepEqual([held.status, held.concurrency_key, held.waiting?.reason, held.waiting?.running, held.waiting?.cap], ["pending", "customer-42", "concurrency_key", 2, 2]);
});

// An Instance as a 1.10.0 server sends it: none of 1.11.0's optional key fields.
const instance = {
  id: "inst_1", sequence: "thumbnail", version: 1, status: "running", input: { image: "cat.png" },
  context: { data: { image: "cat.png" }, config: {} }, output: null, error: null, steps: [], on_error: null,
  idempotency_key: null, created_at: "2026-11-21T10:30:00.000Z", updated_at: "2026-11-21T10:30:01.000Z", finished_at: null,
};

test("P-KEY-7: startInstance sends the key and its limit; a waiting instance says concurrency_key with its slots", async () => {
  const keyed = { ...instance, concurrency_key: "customer-42", max_concurrency: 2 };
  const waiting = { reason: "concurrency_key", detail: "2 instance(s) of concurrency key customer-42 hold its 2 slot(s)", running: 2, cap: 2 };
  const m = mockFetch(() => json(201, keyed), () => json(200, { ...keyed, waiting }), () => json(201, instance));
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch });
  const started = await client.startInstance({ sequence: "thumbnail", input: { image: "cat.png" }, concurrency_key: "customer-42", max_concurrency: 2 });
  assert.deepEqual(m.calls[0]!.body, { sequence: "thumbnail", input: { image: "cat.png" }, concurrency_key: "customer-42", max_concurrency: 2 });
  assert.deepEqual([started.concurrency_key, started.max_concurrency], ["customer-42", 2]);
  const got = await client.getInstance(started.id);
  assert.equal(m.calls[1]!.url.pathname, "/instances/inst_1");
  assert.deepEqual([got.status, got.waiting?.reason, got.waiting?.running, got.waiting?.cap], ["running", "concurrency_key", 2, 2]);
  // Without a key neither field is sent: max_concurrency alone is a 422.
  await client.startInstance({ sequence: "thumbnail" });
  assert.deepEqual(m.calls[2]!.body, { sequence: "thumbnail" });
});

test("P-KEY-7: an Instance from an older server, without the key fields, still reads", async () => {
  const m = mockFetch(() => json(200, instance));
  const got = await new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch }).getInstance("inst_1");
  assert.deepEqual([got.id, got.status, got.concurrency_key, got.max_concurrency, got.waiting], ["inst_1", "running", undefined, undefined, undefined]);
});
