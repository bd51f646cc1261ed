// Issue 18 on the task page, with real traffic over HTTP: the trace id of the task's
// `traceparent` header (P-TEL-1) with a copy button, and per attempt the queue wait
// (claim minus the later of created_at and run_at) and the run time (ended_at - started_at).
import assert from "node:assert/strict";
import { test } from "node:test";
import { openPage, screenshot, useServerAndBrowser } from "./harness.mjs";

let server, browser;
useServerAndBrowser({}, (s, b) => ([server, browser] = [s, b]));

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const detail = (id) => openPage(browser, `${server.url}/ui/#/tasks/${id}`);
const ms = (el) => el.getAttribute("data-ms").then(Number);
const READABLE = /^(< 1 ms|\d+ ms|\d\.\d\d s|\d+\.\d s)$/;

test("P-TEL-1: a traced task shows its trace id (copyable), its queue wait from run_at and its run time", async () => {
  const delay = 1000;
  const enqueuedAt = Date.now();
  const [task] = await server.enqueue([{ handler_name: "render_invoice", delay_ms: delay, headers: { traceparent: `00-${TRACE}-00f067aa0ba902b7-01`, tracestate: "vendor=1" } }]);
  // A long poll claims it as soon as it becomes claimable, after the delay.
  const claim = await server.api("POST", "/workers/tasks/poll", { handler_names: ["render_invoice"], worker_id: "invoices-1", wait_ms: 10_000 });
  assert.equal(claim.status, 200);
  const claimedAt = Date.now();
  assert.ok(claimedAt - enqueuedAt >= delay - 5, "claimed only after the delay");
  await server.api("POST", `/workers/tasks/${task.id}/heartbeat`, { lease_id: claim.body.lease.id, progress: { percent: 50 } });
  const completing = Date.now();
  assert.equal((await server.api("POST", `/workers/tasks/${task.id}/complete`, { lease_id: claim.body.lease.id, output: { pdf: "inv.pdf" } })).status, 200);
  const completedAt = Date.now();

  const t = (await server.api("GET", `/tasks/${task.id}`)).body;
  const [a] = (await server.api("GET", `/tasks/${task.id}/attempts`)).body.attempts;
  const wantWait = Date.parse(a.started_at) - Math.max(Date.parse(t.created_at), Date.parse(t.run_at));
  const wantRun = Date.parse(a.ended_at) - Date.parse(a.started_at);

  const page = await detail(task.id);
  await page.waitForSelector('[data-testid="task-status"] [data-status="completed"]');
  assert.equal(await page.textContent('[data-testid="trace-id"]'), TRACE);
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
  await page.click('[data-testid="copy-trace-id"]');
  await page.waitForSelector('[data-testid="copy-trace-id"]:text("Copied")');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), TRACE);

  const wait = await page.$('[data-attempt="1"] [data-wait]');
  const run = await page.$('[data-attempt="1"] [data-run]');
  // The page's figures are the API's, and plausible: the wait counts from run_at, not
  // from created_at (that would add the 1 s delay), and the run time spans the heartbeat.
  assert.equal(await ms(wait), wantWait);
  assert.ok(wantWait >= 0 && wantWait < delay, `queue wait ${wantWait} ms is under the delay`);
  assert.equal(await ms(run), wantRun);
  assert.ok(wantRun >= completing - claimedAt - 2 && wantRun <= completedAt - enqueuedAt, `run time ${wantRun} ms`);
  assert.match(await wait.textContent(), READABLE);
  assert.match(await run.textContent(), READABLE);
  assert.match(await page.textContent('[data-attempt="1"]'), /queue wait .+ · run time .+/);
  await screenshot(page, "task-detail-trace");
  assert.deepEqual(page.errors, []);
});

test("P-TEL-1: no trace id without a valid traceparent; a retried task's wait is the latest attempt's only", async () => {
  const [plain, zero] = await server.enqueue([
    { handler_name: "resize_image" },
    { handler_name: "resize_image", headers: { traceparent: `00-${"0".repeat(32)}-00f067aa0ba902b7-01` } },
  ]);
  const poll = await server.api("POST", "/workers/tasks/poll/batch", { handler_names: ["resize_image"], worker_id: "img-2", batch_size: 2, wait_ms: 0 });
  assert.equal(poll.body.tasks.length, 2);
  const first = poll.body.tasks.find((x) => x.id === plain.id);
  // Attempt 1 fails retryably with no backoff: the task's run_at moves to that moment.
  await server.api("POST", `/workers/tasks/${plain.id}/fail`, { lease_id: first.lease.id, error: "timeout", code: "timeout", retryable: true, retry_after_ms: 0 });
  const again = await server.api("POST", "/workers/tasks/poll", { handler_names: ["resize_image"], worker_id: "img-2", wait_ms: 5000 });
  assert.equal(again.body.id, plain.id);
  assert.equal((await server.api("POST", `/workers/tasks/${plain.id}/complete`, { lease_id: again.body.lease.id, output: null })).status, 200);

  const page = await detail(plain.id);
  await page.waitForSelector('[data-testid="task-status"] [data-status="completed"]');
  await page.waitForSelector('[data-attempt="2"]');
  assert.equal(await page.$('[data-fact="trace"]'), null, "no trace row without traceparent");
  const t = (await server.api("GET", `/tasks/${plain.id}`)).body;
  const attempts = (await server.api("GET", `/tasks/${plain.id}/attempts`)).body.attempts;
  const second = attempts.find((x) => x.attempt === 2);
  assert.equal(await ms(await page.$('[data-attempt="2"] [data-wait]')), Date.parse(second.started_at) - Math.max(Date.parse(t.created_at), Date.parse(t.run_at)));
  assert.equal(await page.textContent('[data-attempt="1"] [data-wait]'), "—", "attempt 1's ready time is gone");
  assert.ok((await ms(await page.$('[data-attempt="1"] [data-run]'))) >= 0);
  await screenshot(page, "task-detail-no-trace");

  const page2 = await detail(zero.id);
  await page2.waitForSelector('[data-testid="task-status"] [data-status="running"]');
  assert.equal(await page2.$('[data-fact="trace"]'), null, "an all-zero trace id is not a trace");
  assert.equal(await page2.textContent('[data-attempt="1"] [data-run]'), "still running");
  assert.deepEqual([...page.errors, ...page2.errors], []);
});
