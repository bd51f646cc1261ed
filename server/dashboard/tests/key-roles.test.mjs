// Scoped keys from a keys file (P-AUTH-2..5): the header names the key, its role and
// tenant; only operator and admin keys get action buttons; a 403 anywhere shows its detail
// in the banner and each view says what the key cannot read.
import assert from "node:assert/strict";
import { test } from "node:test";
import { eventually, openPage, screenshot, secretOf, texts, useServerAndBrowser } from "./harness.mjs";

const KEYS = {
  root: { role: "admin" },
  ops: { role: "operator", tenant: "t1", tenants: ["t2"] },
  prod: { role: "producer", tenant: "t1" },
  wrk: { role: "worker", tenant: "t1" },
  scrape: { role: "metrics", tenant: "t1" },
};

let server, browser;
useServerAndBrowser({ keys: KEYS }, (s, b) => ([server, browser] = [s, b]));

const as = (id) => ({ apiKey: secretOf(id) });
const bannerDetails = (page) => texts(page, '#banner[data-code="forbidden"] [data-testid="banner-detail"]');

test("P-AUTH-2: worker and metrics keys get no lists and no buttons; each view and the banner say why (403)", async () => {
  const [task] = await server.enqueue([{ handler_name: "resize_image" }], { tenant: "t1" });
  const page = await openPage(browser, `${server.url}/ui/`, as("wrk"));
  await page.waitForSelector('[data-testid="role"]');
  assert.equal(await page.textContent('[data-testid="key-id"]'), "key wrk");
  assert.equal(await page.textContent('[data-testid="role"]'), "worker");
  assert.match(await page.textContent('[data-testid="principal-tenant"]'), /tenant\s*t1/);
  assert.equal(await page.$("#tenant-select"), null, "a key without other tenants has no selector");

  // Each panel says the key cannot read it, with the server's detail (P-AUTH-3).
  for (const panel of ["#queues", "#workers", "#task-list"]) {
    const box = await page.waitForSelector(`${panel} .problem[data-code="forbidden"]`);
    assert.match(await box.textContent(), /403 · forbidden[\s\S]*key 'wrk' \(role worker\) may not call[\s\S]*operator key/);
  }
  await eventually(async () => (await bannerDetails(page)).length === 3, "three refusals in the banner");
  assert.deepEqual((await bannerDetails(page)).sort(), [
    "key 'wrk' (role worker) may not call getQueueStats",
    "key 'wrk' (role worker) may not call listTasks",
    "key 'wrk' (role worker) may not call listWorkers",
  ]);
  await screenshot(page, "worker-key", false);
  assert.equal(await page.$$eval("#workers button, [data-action]", (b) => b.length), 0);

  // Dismissed refusals stay away although every refresh is refused again.
  await page.click("#banner-dismiss");
  await page.waitForSelector("#banner", { state: "hidden" });
  // The panel keeps its last refusal until the next answer redraws it: wait for that box to
  // go, so the banner is checked after a refusal met since the dismissal, not before.
  const stale = await page.$('#queues .problem[data-code="forbidden"]');
  await page.waitForFunction((el) => !el.isConnected, stale, { timeout: 8000 });
  await page.waitForSelector('#queues .problem[data-code="forbidden"]');
  assert.equal(await page.isVisible("#banner"), false);

  // A task page: the worker key may not read tasks either.
  await page.goto(`${server.url}/ui/#/tasks/${task.id}`);
  await page.waitForSelector('#detail .problem[data-code="forbidden"]');
  assert.equal(await page.$$eval("[data-action]", (b) => b.length), 0);

  // A metrics key likewise: /metrics is all it may read.
  const metrics = await openPage(browser, `${server.url}/ui/`, as("scrape"));
  const box = await metrics.waitForSelector('#queues .problem[data-code="forbidden"]');
  assert.match(await box.textContent(), /key 'scrape' \(role metrics\) may not call getQueueStats/);
  assert.equal(await metrics.textContent('[data-testid="role"]'), "metrics");
  assert.deepEqual([...page.errors, ...metrics.errors], []);
});

test("P-AUTH-2: a producer key reads a task without action buttons; an operator key gets them, and its tenant choices", async () => {
  const [task] = await server.enqueue([{ handler_name: "charge_card" }], { tenant: "t1" });
  const [other] = await server.enqueue([{ handler_name: "audit_ledger" }], { tenant: "t2" });

  const producer = await openPage(browser, `${server.url}/ui/#/tasks/${task.id}`, as("prod"));
  await producer.waitForSelector('[data-testid="task-status"] [data-status="pending"]');
  await producer.waitForSelector('[data-testid="no-actions"]');
  assert.equal(await producer.$$eval("[data-action]", (b) => b.length), 0, "no action button for a producer");
  assert.match(await producer.textContent('[data-testid="attempts"]'), /need an operator or admin key/);
  assert.equal(await producer.textContent('[data-testid="role"]'), "producer");
  await screenshot(producer, "producer-key-task", false);

  const operator = await openPage(browser, `${server.url}/ui/#/tasks/${task.id}`, as("ops"));
  await operator.waitForSelector('[data-action="complete"]:not([disabled])');
  assert.deepEqual(await operator.$$eval("[data-action]", (b) => b.map((x) => x.dataset.action)), ["complete", "fail", "cancel", "retry"]);
  assert.equal(await operator.isVisible('[data-testid="no-actions"]'), false);
  // P-TEN-2: its own tenant and its `tenants`, nothing typed.
  assert.deepEqual(await texts(operator, "#tenant-select option"), ["t1", "t2"]);
  assert.equal(await operator.$("#tenant-input"), null);
  await operator.selectOption("#tenant-select", "t2");
  await operator.waitForSelector(`tr[data-task="${other.id}"]`);
  assert.equal(await operator.$(`tr[data-task="${task.id}"]`), null, "t1's task is not listed in t2");

  // A link naming a tenant the key may not act in opens the key's own, and says why.
  const refused = await openPage(browser, `${server.url}/ui/?tenant=t3#/`, as("ops"));
  await refused.waitForSelector(`tr[data-task="${task.id}"]`);
  assert.deepEqual(await bannerDetails(refused), ["key ops (role operator) may not act in tenant t3: showing tenant t1"]);
  assert.deepEqual([...producer.errors, ...operator.errors, ...refused.errors], []);
});

test("P-AUTH-3, P-AUTH-4: the operator's worker table has directives; a key demoted meanwhile (SIGHUP) is refused with 403 in the banner, then loses the buttons", async () => {
  const reg = await server.api("POST", "/workers", { worker_id: "pay-1", handlers: ["settle"] }, { key: secretOf("ops") });
  assert.equal(reg.status, 200);
  const [task] = await server.enqueue([{ handler_name: "settle" }], { tenant: "t1" });
  const page = await openPage(browser, `${server.url}/ui/`, as("ops"));
  await page.waitForSelector('tr[data-worker="pay-1"] button:text("Quiet")');

  await page.goto(`${server.url}/ui/#/tasks/${task.id}`);
  await page.click('[data-action="complete"]');
  await page.waitForSelector('[data-confirm="complete"]');
  // The tab goes to the background (no refresh: a refused read would tell the page first), and
  // the keys file now makes `ops` a producer (SIGHUP): the page still shows the button.
  await page.evaluate(() => Object.defineProperty(document, "hidden", { get: () => true, configurable: true }));
  server.rewriteKeys({ ...KEYS, ops: { ...KEYS.ops, role: "producer" } });
  await eventually(async () => (await server.api("GET", "/whoami", undefined, { key: secretOf("ops") })).body?.role === "producer", "the reloaded keys file");
  assert.equal(await page.textContent('[data-testid="role"]'), "operator", "the page has not noticed yet");
  await page.click('[data-confirm="complete"]');
  await eventually(async () => (await bannerDetails(page)).includes("key 'ops' (role producer) may not call completeTaskManually"), "the refusal in the banner");
  // The refusal makes the page ask /whoami again: it learns the new role and drops the buttons.
  await page.waitForSelector('[data-testid="no-actions"]');
  assert.equal(await page.textContent('[data-testid="role"]'), "producer");
  assert.equal(await page.$$eval("[data-action]", (b) => b.length), 0);
  await screenshot(page, "forbidden-banner", false);
  assert.equal((await server.api("GET", `/tasks/${task.id}`, undefined, { tenant: "t1" })).body.status, "pending", "the task is unchanged");
  assert.deepEqual(page.errors, []);
  server.rewriteKeys(KEYS);
});
