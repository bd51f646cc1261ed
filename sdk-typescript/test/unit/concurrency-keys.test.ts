// P-KEY-1 on Orch8Client: enqueue and enqueueBatch send concurrency_key / max_concurrency as
// given, a Task reads them back, and a held task's waiting says concurrency_key with its slots.
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
