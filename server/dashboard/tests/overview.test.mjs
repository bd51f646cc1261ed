// A realistic scene, seen whole: two registered workers (one long-polling), a stuck queue,
// a handler at its running cap (P-OBS-4), running, scheduled and failed work. Its screenshot is the README's (make screenshot).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { eventually, launchBrowser, openPage, screenshot, startServer } from "./harness.mjs";

let server, browser;
const polls = [];
before(async () => {
  // A worker counts as a poller while its poll waits and for one heartbeat interval after
  // (P-OBS-1): 10 s, so a worker that polled once is still counted at the page's 3 s refresh.
  [server, browser] = await Promise.all([startServer({ args: ["--heartbeat-interval-ms", "10000"] }), launchBrowser()]);
});
after(async () => {
  await browser?.close();
  await server?.stop(); // draining answers the open long-poll at once
  await Promise.allSettled(polls);
});

test("the overview shows queues, workers and tasks together", async () => {
  const register = (body) => server.api("POST", "/workers", body);
  await register({ worker_id: "img-worker-1", hostname: "web-01", pid: 31337, handlers: ["process_image"], queues: ["default"], concurrency: 8, sdk: "orch8-python/0.1.0" });
  await register({ worker_id: "mailer-2", hostname: "web-02", pid: 4211, handlers: ["send_email"], queues: ["default"], concurrency: 4, sdk: "orch8-go/0.1.0" });
  await server.enqueue([
    ...Array.from({ length: 6 }, (_, i) => ({ handler_name: "process_image", params: { image: `cat-${i}.png` } })),
    ...Array.from({ length: 4 }, (_, i) => ({ handler_name: "send_email", params: { to: `user${i}@example.com` } })),
    ...Array.from({ length: 9 }, (_, i) => ({ handler_name: "transcode_video", queue_name: "gpu", params: { clip: i } })),
    { handler_name: "send_email", params: { to: "digest@example.com" }, delay_ms: 600_000 },
  ]);
  // img-worker-1 claims three images and fails one for good; mailer-2 claims all four emails.
  const images = await server.api("POST", "/workers/tasks/poll/batch", { handler_names: ["process_image"], worker_id: "img-worker-1", batch_size: 3, wait_ms: 0 });
  assert.equal(images.body.tasks.length, 3);
  const bad = images.body.tasks[0];
  await server.api("POST", `/workers/tasks/${bad.id}/fail`, { lease_id: bad.lease.id, error: "image is not a PNG", code: "bad_input" });
  const mails = await server.api("POST", "/workers/tasks/poll/batch", { handler_names: ["send_email"], worker_id: "mailer-2", batch_size: 4, wait_ms: 0 });
  assert.equal(mails.body.tasks.length, 4);
  for (const t of mails.body.tasks.slice(0, 2)) await server.api("POST", `/workers/tasks/${t.id}/complete`, { lease_id: t.lease.id, output: { sent: true } });
  await server.api("POST", "/workers/img-worker-1/heartbeat", { active_task_ids: images.body.tasks.slice(1).map((t) => t.id) });
  await server.api("POST", "/workers/mailer-2/heartbeat", { active_task_ids: mails.body.tasks.slice(2).map((t) => t.id) });
  await server.api("POST", "/workers/mailer-2/quiet");
  // An operator capped process_image at the two it runs (P-CTRL-2): its three pending wait.
  assert.equal((await server.api("PUT", "/handlers/process_image/limit", { max_running: 2 })).status, 200);
  // mailer-2 keeps a long-poll open for more mail; nobody polls the gpu queue.
  polls.push(server.api("POST", "/workers/tasks/poll", { handler_names: ["send_email"], worker_id: "mailer-2", wait_ms: 8000 }));

  const page = await openPage(browser, `${server.url}/ui/`);
  await page.waitForSelector('.queue-row[data-queue="gpu"] [data-badge="stuck"]');
  await page.waitForSelector('.queue-row[data-handler="send_email"] [data-badge="polling"]');
  await page.waitForSelector('tr[data-worker="mailer-2"] [data-directive="quiet"]');
  await page.waitForSelector("tr[data-task]");
  await page.waitForSelector('.queue-row[data-handler="process_image"] [data-blocked="handler_cap"]');
  const inFlight = Object.fromEntries(
    await page.$$eval("tr[data-worker]", (trs) => trs.map((tr) => [tr.dataset.worker, tr.querySelector('[data-testid="in-flight"]').textContent])),
  );
  assert.deepEqual(inFlight, { "img-worker-1": "2 / 8", "mailer-2": "2 / 4" });
  // Stuck rows come first: they are what an operator opens the page for.
  assert.equal(await page.getAttribute(".queue-row >> nth=0", "data-queue"), "gpu");
  await page.mouse.move(0, 0);
  await screenshot(page, "overview", false);
  assert.deepEqual(page.errors, []);
});

test("a task's attempt timeline: lease expired, failed and retried, running", async () => {
  const [task] = await server.enqueue([{ handler_name: "render_pdf", params: { invoice: "INV-2026-0042" }, context: { customer: "acme" } }]);
  const claim = (body) => server.api("POST", "/workers/tasks/poll", { handler_names: ["render_pdf"], wait_ms: 2000, ...body });
  // Attempt 1: a lease of 100 ms that nobody extends is reaped (P-LEASE-6).
  assert.equal((await claim({ worker_id: "pdf-1", lease_ms: 100 })).status, 200);
  const reaped = () => server.api("GET", `/tasks/${task.id}/attempts`).then((r) => r.body.attempts[0]?.outcome === "lease_expired");
  await eventually(reaped, "attempt 1 reaped");
  // Attempt 2 fails retryable at once; attempt 3 is running with a checkpoint.
  const second = await claim({ worker_id: "pdf-2" });
  await server.api("POST", `/workers/tasks/${task.id}/fail`, { lease_id: second.body.lease.id, error: "font cache locked", retryable: true, retry_after_ms: 0, code: "retryable_error" });
  const third = await claim({ worker_id: "pdf-2" });
  assert.equal(third.body.attempt, 3);
  await server.api("POST", `/workers/tasks/${task.id}/heartbeat`, { lease_id: third.body.lease.id, checkpoint: { pages_done: 12 }, progress: { percent: 60 } });

  const page = await openPage(browser, `${server.url}/ui/#/tasks/${task.id}`);
  await page.waitForSelector('[data-testid="attempts"] li[data-attempt="3"]');
  const outcomes = await page.$$eval('[data-testid="attempts"] li', (lis) => lis.map((li) => li.querySelector("[data-status]").dataset.status));
  assert.deepEqual(outcomes, ["lease_expired", "failed", "running"]);
  assert.match(await page.textContent('[data-attempt="2"]'), /retryable_error\s*font cache locked/);
  assert.match(await page.textContent('[data-testid="task-error"]'), /retryable_error/);
  await page.mouse.move(0, 0);
  await screenshot(page, "task-detail-timeline");
});
