// Workflow instances (P-WF-3..10) in the dashboard: a sequence driven by a raw HTTP worker
// from the test renders its step timeline (parallel group, fallback, on_error, task links);
// a step task's page links back to its instance; the list's counts, filters and paging;
// and the roles of P-AUTH-2 (cancel: producer and up; retry: operator and up).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { eventually, launchBrowser, openPage, screenshot, secretOf, startServer, texts } from "./harness.mjs";

const KEYS = {
  root: { role: "admin" },
  ops: { role: "operator", tenant: "t1" },
  prod: { role: "producer", tenant: "t1" },
};
const T1 = { tenant: "t1" };

let server, browser;
before(async () => {
  [server, browser] = await Promise.all([startServer({ keys: KEYS }), launchBrowser()]);
  // fetch -> fan (left with a fallback, right in parallel) -> finish; on_error alerts.
  await define({
    name: "ingest",
    steps: [
      { id: "fetch", handler: "wf_fetch", params: { url: { $from: "input.url" } } },
      {
        id: "fan",
        parallel: [
          { id: "left", handler: "wf_left", fallback: { handler: "wf_left_fb" } },
          { id: "right", handler: "wf_right" },
        ],
      },
      { id: "finish", handler: "wf_finish" },
    ],
    on_error: { handler: "wf_alert" },
  });
  await define({ name: "single", steps: [{ id: "only", handler: "wf_single" }] });
  await define({ name: "naps", steps: [{ id: "nap", handler: "sleep", params: { duration_ms: 3_600_000 } }] });
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

const as = (id) => ({ apiKey: secretOf(id) });

async function define(body) {
  const res = await server.api("POST", "/sequences", body, T1);
  assert.ok([200, 201].includes(res.status), `define ${body.name}: ${res.status} ${JSON.stringify(res.body)}`);
}

async function start(sequence, input = {}) {
  const res = await server.api("POST", "/instances", { sequence, input }, T1);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

// The raw worker of the harness, in tenant t1.
const claim = (handler) => server.claim(handler, T1);
const complete = (task, output) => server.complete(task, output, T1);
const fail = (task, error, code) => server.fail(task, error, code, T1);

const stepStatus = (page, id) => page.getAttribute(`[data-step="${id}"]`, "data-step-status");

test("P-WF-10, P-WF-3, P-WF-6: an instance driven by a raw worker renders its step timeline; task and instance pages link each other", async () => {
  const inst = await start("ingest", { url: "https://example.com/doc" });
  const page = await openPage(browser, `${server.url}/ui/#/instances/${inst.id}`, as("ops"));
  await page.waitForSelector('[data-testid="instance-status"] [data-status="running"]');
  await page.waitForSelector('[data-step="fetch"][data-step-status="running"]');
  assert.equal(await stepStatus(page, "fan"), "pending");

  const fetched = await claim("wf_fetch");
  assert.deepEqual(fetched.context, { instance_id: inst.id, step_id: "fetch" });
  assert.deepEqual(fetched.params, { url: "https://example.com/doc" });
  await complete(fetched, { pages: 3 });
  // left fails permanently: its fallback runs and completes for it (P-WF-6); right completes.
  const [left, right] = await Promise.all([claim("wf_left"), claim("wf_right")]);
  await fail(left, "parser crashed", "parse_error");
  await complete(right, { side: "right" });
  await complete(await claim("wf_left_fb"), { side: "fallback" });
  // finish fails: the instance fails with its error, and on_error runs.
  await fail(await claim("wf_finish"), "disk full", "no_space");
  const alert = await claim("wf_alert");
  assert.equal(alert.context.step_id, "on_error");
  await complete(alert, { paged: true });

  // The page follows by itself (it refreshes while the instance runs).
  await page.waitForSelector('[data-testid="instance-status"] [data-status="failed"]', { timeout: 15_000 });
  await page.waitForSelector('[data-step="on_error"][data-step-status="completed"]');
  assert.equal(await stepStatus(page, "fetch"), "completed");
  assert.equal(await page.textContent('[data-step="fetch"] [data-testid="step-output"]'), '{"pages":3}');
  assert.equal(await page.getAttribute('[data-step="fetch"] [data-task-link]', "data-task-link"), fetched.id);
  assert.equal(await page.getAttribute('[data-step="fetch"] [data-attempts]', "data-attempts"), "1");
  // The parallel group: marked, its children nested under it, the fallback shown.
  assert.equal(await stepStatus(page, "fan"), "completed");
  assert.ok(await page.$('[data-step="fan"] [data-testid="parallel"]'));
  assert.deepEqual(await page.$$eval('[data-group="fan"] li[data-step]', (els) => els.map((e) => e.dataset.step)), ["left", "right"]);
  assert.ok(await page.$('[data-step="left"] [data-testid="fallback"]'), "left is marked as having run its fallback");
  assert.equal(await page.$('[data-step="right"] [data-testid="fallback"]'), null);
  assert.equal(await page.textContent('[data-step="left"] [data-testid="step-output"]'), '{"side":"fallback"}');
  assert.match(await page.textContent('[data-step="left"] [data-testid="step-error"]'), /failed before its fallback: parse_error\s+parser crashed/);
  assert.equal(await page.$('[data-step="fan"] > .attempt-head [data-attempts]'), null, "a group has no attempts of its own");
  assert.equal(await stepStatus(page, "finish"), "failed");
  assert.match(await page.textContent('[data-step="finish"] [data-testid="step-error"]'), /no_space\s+disk full/);
  assert.match(await page.textContent('[data-testid="instance-error"]'), /no_space[\s\S]*disk full/);
  assert.ok(await page.$('[data-step="on_error"] [data-testid="on-error"]'));
  // An operator may retry a failed instance (P-WF-8) but not cancel it (P-WF-7: 409).
  await page.waitForSelector('[data-instance-action="retry"]:not([disabled])');
  assert.equal(await page.isDisabled('[data-instance-action="cancel"]'), true);
  await screenshot(page, "instance-timeline");

  // A step's task link opens the task page; the task page links back (context.instance_id).
  await page.click('[data-step="fetch"] [data-task-link]');
  await page.waitForSelector(`[data-testid="task-id"]:text("${fetched.id}")`);
  assert.match(await page.textContent('[data-testid="instance-link"]'), new RegExp(`step fetch of workflow instance ${inst.id}`));
  await page.click('[data-testid="instance-link"] a');
  await page.waitForSelector(`[data-testid="instance-id"]:text("${inst.id}")`);

  // Retry from the failed step: finish is dispatched anew and the instance runs again.
  await page.click('[data-instance-action="retry"]');
  await page.click('[data-confirm="retry"]');
  await page.waitForSelector('[data-testid="instance-status"] [data-status="running"]');
  await complete(await claim("wf_finish"), { done: true });
  await page.waitForSelector('[data-testid="instance-status"] [data-status="completed"]', { timeout: 15_000 });
  assert.deepEqual(page.errors, []);
});

test("P-WF-10: the instance list counts states, filters by sequence and status, and pages with the cursor", async () => {
  const naps = [];
  for (let i = 0; i < 26; i++) naps.push(await start("naps", { n: i }));
  const single = await start("single");
  const cancelled = await server.api("POST", `/instances/${naps[0].id}/cancel`, {}, T1);
  assert.equal(cancelled.status, 200);

  const page = await openPage(browser, `${server.url}/ui/`, as("ops"));
  await page.waitForSelector('[data-role]');
  await page.click("#nav-instances");
  await page.waitForSelector(`tr[data-instance="${single.id}"]`);
  // Every state counted across sequences (other tests may have left instances: the API says how many).
  const count = (s) => page.textContent(`[data-count="${s}"] [data-n]`);
  const truth = async (s) => String((await server.api("GET", `/instances?status=${s}&limit=500`, undefined, T1)).body.instances.length);
  await eventually(async () => (await count("running")) === (await truth("running")), "running instances counted");
  assert.ok(Number(await count("running")) >= 26);
  for (const s of ["completed", "failed", "cancelled"]) assert.equal(await count(s), await truth(s), s);
  assert.ok(Number(await count("cancelled")) >= 1);

  // Newest first, 25 a page, then the older page by cursor.
  assert.equal(await page.$$eval("tr[data-instance]", (r) => r.length), 25);
  assert.equal(await page.getAttribute("tr[data-instance]", "data-instance"), single.id);
  await page.click("#i-older");
  await page.waitForSelector('[data-testid="instance-page-info"]:text("Page 2")');
  const older = await page.$$eval("tr[data-instance]", (r) => r.map((x) => x.dataset.instance));
  assert.ok(older.includes(naps[0].id) && !older.includes(single.id), `page 2: ${older}`);

  // An operator gets the sequence names to pick from (GET /sequences).
  await eventually(async () => (await page.$$eval("#dl-sequences option", (o) => o.map((x) => x.value))).join() === "ingest,naps,single", "sequence suggestions");
  // Filter by sequence (typed), then by status (a count tile): the hash keeps both.
  await page.fill("#i-sequence", "single");
  await page.press("#i-sequence", "Enter");
  await eventually(async () => (await page.$$eval("tr[data-instance]", (r) => r.map((x) => x.dataset.instance))).join() === single.id, "only the single instance");
  assert.match(await page.evaluate(() => location.hash), /sequence=single/);
  await page.fill("#i-sequence", "naps");
  await page.press("#i-sequence", "Enter");
  await page.click('[data-count="cancelled"]');
  await eventually(async () => (await page.$$eval("tr[data-instance]", (r) => r.map((x) => x.dataset.instance))).join() === naps[0].id, "only the cancelled nap");
  assert.equal(await page.evaluate(() => location.hash), "#/instances?sequence=naps&status=cancelled");
  assert.equal(await page.inputValue("#i-status"), "cancelled");
  await page.selectOption("#i-status", "completed");
  await page.waitForSelector('.empty-state:text("No instances match these filters.")');
  await page.click("#i-clear");
  await page.waitForSelector(`tr[data-instance="${single.id}"]`);
  assert.deepEqual(page.errors, []);
});

test("P-AUTH-2, P-WF-7: a producer key sees Cancel but not Retry, and cancels a running instance", async () => {
  const inst = await start("single");
  const page = await openPage(browser, `${server.url}/ui/#/instances/${inst.id}`, as("prod"));
  await page.waitForSelector('[data-instance-action="cancel"]:not([disabled])');
  assert.deepEqual(await page.$$eval("[data-instance-action]", (b) => b.map((x) => x.dataset.instanceAction)), ["cancel"]);
  assert.match(await page.textContent('[data-testid="no-retry"]'), /Retry needs an operator or admin key/);
  await page.click('[data-instance-action="cancel"]');
  await page.fill('[data-testid="confirm"] input[name="reason"]', "not needed");
  await page.click('[data-confirm="cancel"]');
  await page.waitForSelector('[data-testid="instance-status"] [data-status="cancelled"]');
  await page.waitForSelector('[data-step="only"][data-step-status="cancelled"]');
  assert.equal((await server.api("GET", `/instances/${inst.id}`, undefined, T1)).body.status, "cancelled");
  // Its step task: the producer may read it, and it links back to the instance.
  const taskId = await page.getAttribute('[data-step="only"] [data-task-link]', "data-task-link");
  await page.click('[data-step="only"] [data-task-link]');
  await page.waitForSelector(`[data-testid="instance-link"] a[href="#/instances/${inst.id}"]`);
  assert.equal((await texts(page, '[data-testid="task-id"]'))[0], taskId);
  await screenshot(page, "producer-instance-task", false);

  // The producer may list instances too (no sequence names: listing sequences is an operator call).
  await page.goto(`${server.url}/ui/#/instances?status=cancelled`);
  await page.waitForSelector(`tr[data-instance="${inst.id}"]`);
  assert.equal(page.requests.some((u) => new URL(u).pathname === "/sequences"), false);
  assert.equal(await page.isVisible('#banner[data-code="forbidden"]'), false);

  // An operator on the same (cancelled) instance: both buttons, neither possible now.
  const ops = await openPage(browser, `${server.url}/ui/#/instances/${inst.id}`, as("ops"));
  await ops.waitForSelector('[data-instance-action="retry"][disabled]');
  assert.equal(await ops.isDisabled('[data-instance-action="cancel"]'), true);
  assert.deepEqual([...page.errors, ...ops.errors], []);
});

test("P-TEN-2: the instance views act in the tenant shown (X-Tenant-Id), never across tenants", async () => {
  const inst = await start("single");
  // An admin key (tenant default) on a link naming t1: t1's instances, asked with X-Tenant-Id.
  const page = await openPage(browser, `${server.url}/ui/?tenant=t1#/instances`, as("root"));
  await page.waitForSelector(`tr[data-instance="${inst.id}"]`);
  const headers = [];
  page.on("request", (r) => new URL(r.url()).pathname.startsWith("/instances") && headers.push(r.headers()["x-tenant-id"]));
  await page.click(`tr[data-instance="${inst.id}"] a`);
  await page.waitForSelector(`[data-testid="instance-id"]:text("${inst.id}")`);
  assert.ok(headers.length > 0 && headers.every((t) => t === "t1"), `X-Tenant-Id sent: ${headers}`);
  // The admin's own tenant has none of them; the same instance id there is a 404 problem.
  const own = await openPage(browser, `${server.url}/ui/?tenant=default#/instances`, as("root"));
  await own.waitForSelector('.empty-state:text("No instances match these filters.")');
  await own.goto(`${server.url}/ui/?tenant=default#/instances/${inst.id}`);
  await own.waitForSelector('#detail .problem[data-code="not_found"]');
  assert.deepEqual([...page.errors, ...own.errors], []);
});
