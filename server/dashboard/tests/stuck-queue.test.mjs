// The stuck-queue signal (P-OBS-1) as an operator sees it: pending tasks with no poller
// show a red badge, which turns green once a worker polls for that handler; pending work
// that no live worker may take (required labels) says unroutable (P-OBS-4).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { launchBrowser, openPage, screenshot, startServer } from "./harness.mjs";

let server, browser;
before(async () => {
  // A worker counts as a poller while its poll waits and for one heartbeat interval after
  // (P-OBS-1): 10 s, so a worker that polled once is still counted at the page's 3 s refresh.
  [server, browser] = await Promise.all([startServer({ args: ["--heartbeat-interval-ms", "10000"] }), launchBrowser()]);
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

const badge = (handler) => `.queue-row[data-handler="${handler}"] [data-badge]`;

test("red badge for pending work without a poller, green once a worker long-polls", async () => {
  await server.enqueue([
    { handler_name: "resize", params: { n: 1 } },
    { handler_name: "resize", params: { n: 2 } },
    { handler_name: "resize", params: { n: 3 } },
  ]);
  const page = await openPage(browser, `${server.url}/ui/`);
  await page.waitForSelector(`${badge("resize")}[data-badge="stuck"]`, { timeout: 8000 });
  assert.equal(await page.textContent(badge("resize")), "no poller");
  assert.equal(await page.textContent('.queue-row[data-handler="resize"] [data-count="pending"] b'), "3");
  await screenshot(page, "stuck-queue");

  // A worker long-polls for the handler: it claims one task, two stay pending, and the
  // server now counts it as an active poller.
  const poll = await server.api("POST", "/workers/tasks/poll", { handler_names: ["resize"], worker_id: "resize-worker-1", wait_ms: 5000 });
  assert.equal(poll.status, 200);
  await page.waitForSelector(`${badge("resize")}[data-badge="polling"]`, { timeout: 8000 });
  assert.equal(await page.textContent(badge("resize")), "1 polling");
  assert.equal(await page.textContent('.queue-row[data-handler="resize"] [data-count="running"] b'), "1");

  // A poller still waiting on an empty handler shows up too, green and nothing pending.
  const waiting = server.api("POST", "/workers/tasks/poll", { handler_names: ["thumbnail"], worker_id: "thumb-worker-1", wait_ms: 15000 });
  await page.waitForSelector(`${badge("thumbnail")}[data-badge="polling"]`, { timeout: 8000 });
  await screenshot(page, "queues-polling");
  await server.enqueue([{ handler_name: "thumbnail" }]); // wakes the long-poll (P-POLL-3)
  assert.equal((await waiting).status, 200);
  assert.deepEqual(page.errors, []);
});

test("gray idle badge when nobody polls and nothing is pending", async () => {
  const [task] = await server.enqueue([{ handler_name: "report", params: {} }]);
  const page = await openPage(browser, `${server.url}/ui/`);
  await page.waitForSelector(`${badge("report")}[data-badge="stuck"]`, { timeout: 8000 });
  // Failing it by hand leaves a failed count but nothing pending: idle, not stuck.
  const failed = await server.api("POST", `/tasks/${task.id}/fail`, { error: "no longer needed" });
  assert.equal(failed.status, 200);
  await page.waitForSelector(`${badge("report")}[data-badge="idle"]`, { timeout: 8000 });
  assert.equal(await page.textContent(badge("report")), "idle");
});

test("P-OBS-4, P-LABEL-3: pending work no live worker may take says unroutable until a matching worker registers", async () => {
  await server.enqueue([
    { handler_name: "train_model", queue_name: "ml", required_labels: { gpu: "a100" } },
    { handler_name: "train_model", queue_name: "ml", required_labels: { gpu: "a100" } },
  ]);
  const page = await openPage(browser, `${server.url}/ui/`);
  const row = '.queue-row[data-queue="ml"][data-handler="train_model"]';
  const badge = await page.waitForSelector(`${row} [data-blocked="unroutable"]`, { timeout: 8000 });
  assert.equal(await badge.textContent(), "unroutable");
  assert.equal(await page.textContent(`${row} [data-control="unroutable"]`), "2 unroutable");
  await page.click(`${row} a.queue-link`);
  assert.equal(await page.textContent('[data-testid="queue-handlers"] tr[data-handler="train_model"] [data-testid="unroutable"]'), "2");
  await page.waitForSelector('[data-testid="queue-state"] [data-blocked="unroutable"]');

  // A worker with the label registers: the tasks are routable, the row no longer blocked.
  const reg = await server.api("POST", "/workers", { worker_id: "gpu-box-1", handlers: ["train_model"], queues: ["ml"], labels: { gpu: "a100" } });
  assert.equal(reg.status, 200);
  await page.waitForSelector('[data-testid="queue-handlers"] tr[data-handler="train_model"] [data-testid="unroutable"]:text("0")', { timeout: 8000 });
  await page.click("a.back");
  // The overview shows its last frame (still unroutable) until its reload answers: wait
  // for the badge to go rather than reading the row at once.
  await page.waitForSelector(`${row} [data-blocked]`, { state: "detached", timeout: 8000 });
  await page.waitForSelector(`${row} [data-badge="stuck"]`);
  assert.deepEqual(page.errors, []);
});
