// The task page's Why line (P-OBS-7): the reason of GET /tasks/{id}'s `waiting` as a badge,
// its detail, and per reason the number or link that helps act. Render tests answer the
// task with the fixtures of tests/fixtures/waiting.mjs (the real bundle, served by a real
// server); the live test pauses a real queue and follows the task to running.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { waitingCases } from "./fixtures/waiting.mjs";
import { launchBrowser, openPage, screenshot, startServer, texts } from "./harness.mjs";

let server, browser, task;
const HANDLER = "resize_image";
const QUEUE = "images";
before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
  [task] = await server.enqueue([{ handler_name: HANDLER, queue_name: QUEUE, required_labels: { region: "eu", gpu: "a100" } }]);
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

/** The task page, GET /tasks/{id} answered with the real task plus the case `pick()` names at each load. */
async function show(pick) {
  const page = await openPage(browser, `${server.url}/ui/`);
  await page.waitForSelector("[data-role]");
  await page.route(`**/tasks/${task.id}`, (route) => {
    const c = waitingCases(Date.now(), { handler: HANDLER, queue: QUEUE })[pick()];
    return route.fulfill({ json: { ...task, ...c.task, status: c.status, lease: c.lease ?? null, waiting: c.waiting } });
  });
  await page.evaluate((id) => (location.hash = `#/tasks/${id}`), task.id);
  await page.waitForSelector(`[data-testid="task-status"] [data-status="${waitingCases(0, {})[pick()].status}"]`);
  return page;
}

const text = (page, id) => page.textContent(`[data-testid="why"] [data-testid="${id}"]`);
const attr = (page, sel, name) => page.getAttribute(`[data-testid="why"] ${sel}`, name);

/** What every reason shows: its badge (label, tone) and the server's sentence. */
async function line(page, reason) {
  const c = waitingCases(0, { handler: HANDLER, queue: QUEUE })[reason];
  assert.equal(await page.getAttribute('[data-testid="why"]', "data-reason"), c.waiting.reason);
  // The fixture's times moved on since the page's load: compare the sentence around them.
  const bare = (s) => s.replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<time>");
  assert.equal(bare(await text(page, "why-detail")), bare(c.waiting.detail), `detail of ${reason}`);
  return { badge: await text(page, "why-badge"), tone: await attr(page, '[data-testid="why-badge"]', "class"), extra: (await page.$('[data-testid="why-extra"]')) ? await text(page, "why-extra") : null };
}

test("scheduled and retry_backoff: claimable in a relative time, the exact time on hover", async () => {
  for (const [reason, label, rel] of [["scheduled", "scheduled", /^claimable in (39|40) s$/], ["retry_backoff", "retry backoff", /^claimable in 5 min$/]]) {
    const page = await show(() => reason);
    const got = await line(page, reason);
    assert.equal(got.badge, label);
    assert.match(got.tone, /why-time/);
    assert.match(got.extra, rel);
    assert.ok(Date.parse(await attr(page, "[data-until]", "data-until")) > Date.now(), "until is the fixture's future time");
    assert.deepEqual(page.errors, []);
    await page.close();
  }
});

test("paused, queue_cap, handler_cap: running/cap and a link to the queue view", async () => {
  for (const [reason, label, load] of [["paused", "paused", null], ["queue_cap", "queue cap", "4/4"], ["handler_cap", "handler cap", "3/2"]]) {
    const page = await show(() => reason);
    const got = await line(page, reason);
    assert.equal(got.badge, label);
    assert.match(got.tone, /why-blocked/);
    if (load) assert.equal(await text(page, "why-load"), load);
    else assert.equal(got.extra, `resume it on queue ${QUEUE}`);
    assert.equal(await attr(page, '[data-testid="why-queue"]', "href"), `#/queues/${QUEUE}`);
    if (reason === "queue_cap") {
      await screenshot(page, "task-why-cap");
      await page.click('[data-testid="why-queue"]');
      await page.waitForFunction((q) => location.hash === `#/queues/${q}`, QUEUE);
    }
    assert.deepEqual(page.errors, []);
    await page.close();
  }
});

test("unroutable names the labels no live worker has; no_poller says who must poll; claimable counts pollers", async () => {
  let page = await show(() => "unroutable");
  assert.equal((await line(page, "unroutable")).badge, "unroutable");
  assert.deepEqual(await texts(page, '[data-testid="why"] [data-label]'), ["region=eu", "gpu=a100"]);
  await page.close();

  page = await show(() => "no_poller");
  const np = await line(page, "no_poller");
  assert.equal(np.badge, "no poller");
  assert.equal(np.extra, `start a worker that polls ${HANDLER} on queue ${QUEUE}`);
  await page.close();

  page = await show(() => "claimable");
  const cl = await line(page, "claimable");
  assert.equal(cl.badge, "claimable");
  assert.match(cl.tone, /why-ok/);
  assert.equal(await text(page, "why-pollers"), "2");
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("concurrency_key: key full, the slots taken of the cap and the key", async () => {
  const page = await show(() => "concurrency_key");
  const got = await line(page, "concurrency_key");
  assert.equal(got.badge, "key full");
  assert.match(got.tone, /why-time/);
  assert.equal(await text(page, "why-load"), "2/2");
  assert.equal(got.extra, "2/2 slots of customer-42 taken: admitted as one frees");
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("running: the worker (a link to its tasks), its last heartbeat and the lease end", async () => {
  const page = await show(() => "running");
  const got = await line(page, "running");
  assert.equal(got.badge, "running");
  assert.equal(await text(page, "why-worker"), "img-worker-7");
  assert.equal(await attr(page, '[data-testid="why-worker"]', "href"), "#/?worker=img-worker-7&range=all");
  assert.match(got.extra, /^img-worker-7 · last heartbeat 1[2-4] s ago · lease ends in 2[3-5] s$/);
  await screenshot(page, "task-why-running");
  await page.click('[data-testid="why-worker"]');
  await page.waitForFunction(() => document.querySelector("#f-worker")?.value === "img-worker-7");
  assert.equal(await page.inputValue("#f-range"), "all", "the worker's tasks of any time");
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("rate_limited: claimable at the next token, the exact time on hover, and the limit's key", async () => {
  let page = await show(() => "rate_limited");
  let got = await line(page, "rate_limited");
  assert.equal(got.badge, "rate limited");
  assert.match(got.tone, /why-time/);
  assert.match(got.extra, /^claimable in (19|20) s · rate limit sms-eu$/);
  assert.ok(Date.parse(await attr(page, "[data-until]", "data-until")) > Date.now(), "until is the fixture's future time");
  assert.deepEqual(page.errors, []);
  await page.close();

  page = await show(() => "rate_limited_burst"); // no next token while the burst waits for workers
  got = await line(page, "rate_limited_burst");
  assert.equal(got.badge, "rate limited");
  assert.equal(got.extra, "rate limit sms-eu: admitted as workers claim its admitted tasks");
  assert.equal(await page.$('[data-testid="why"] [data-until]'), null);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("an unknown reason shows its detail; a finished task has no Why line", async () => {
  let page = await show(() => "fair_share");
  const got = await line(page, "fair_share");
  assert.equal(got.badge, "fair_share");
  assert.match(got.tone, /why-other/);
  assert.equal(got.extra, null, "nothing invented for a reason the page does not know");
  await page.close();

  page = await show(() => "finished");
  await page.waitForSelector('[data-testid="attempts"]');
  assert.equal(await page.$('[data-testid="why"]'), null);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("the Why line follows the task at the page's refresh", async () => {
  let reason = "no_poller";
  const page = await show(() => reason);
  await page.waitForSelector('[data-testid="why"][data-reason="no_poller"]');
  reason = "running";
  await page.waitForSelector('[data-testid="why"][data-reason="running"]', { timeout: 8000 });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("live: a task held behind its concurrency key says so, with the server's count, until a slot frees", async () => {
  const [first, second] = await server.enqueue([
    { handler_name: "why_key", queue_name: "why_key_q", concurrency_key: "acct-9" },
    { handler_name: "why_key", queue_name: "why_key_q", concurrency_key: "acct-9" },
  ]);
  const page = await openPage(browser, `${server.url}/ui/#/tasks/${second.id}`);
  await page.waitForSelector('[data-testid="why"][data-reason="concurrency_key"]');
  assert.equal(await text(page, "why-detail"), (await server.api("GET", `/tasks/${second.id}`)).body.waiting.detail);
  assert.equal(await text(page, "why-load"), "1/1");
  assert.equal(await text(page, "why-badge"), "key full");
  assert.equal((await server.api("POST", `/tasks/${first.id}/cancel`, {})).status, 200);
  await page.waitForSelector('[data-testid="why"][data-reason="no_poller"]', { timeout: 8000 });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("live: a task waiting for a token of its rate limit says so, until the limit is removed", async () => {
  assert.equal((await server.api("PUT", "/rate-limits/why-rate", { limit: 1, period_ms: 60000, burst: 1 })).status, 200);
  const [, second] = await server.enqueue([
    { handler_name: "why_rate", queue_name: "why_rate_q", rate_limit_key: "why-rate" },
    { handler_name: "why_rate", queue_name: "why_rate_q", rate_limit_key: "why-rate" },
  ]);
  const page = await openPage(browser, `${server.url}/ui/#/tasks/${second.id}`);
  await page.waitForSelector('[data-testid="why"][data-reason="rate_limited"]');
  assert.equal(await text(page, "why-detail"), (await server.api("GET", `/tasks/${second.id}`)).body.waiting.detail);
  assert.equal(await text(page, "why-badge"), "rate limited");
  assert.match(await text(page, "why-extra"), /rate limit why-rate/);
  assert.equal((await server.api("DELETE", "/rate-limits/why-rate")).status, 204); // P-RATE-4: no pace
  await page.waitForSelector('[data-testid="why"][data-reason="no_poller"]', { timeout: 8000 });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("live: a task on a paused queue says paused; resumed, no poller; claimed, who runs it", async () => {
  const [t] = await server.enqueue([{ handler_name: "why_live", queue_name: "why_live_q" }]);
  assert.equal((await server.api("POST", "/queues/why_live_q/pause")).status, 200);
  const page = await openPage(browser, `${server.url}/ui/#/tasks/${t.id}`);
  await page.waitForSelector('[data-testid="why"][data-reason="paused"]');
  assert.equal(await text(page, "why-badge"), "paused");
  assert.equal(await text(page, "why-detail"), (await server.api("GET", `/tasks/${t.id}`)).body.waiting.detail);
  assert.equal(await attr(page, '[data-testid="why-queue"]', "href"), "#/queues/why_live_q");
  await screenshot(page, "task-why-paused");

  assert.equal((await server.api("POST", "/queues/why_live_q/resume")).status, 200);
  await page.waitForSelector('[data-testid="why"][data-reason="no_poller"]', { timeout: 8000 });
  const claim = await server.api("POST", "/workers/tasks/poll", { handler_names: ["why_live"], queue_name: "why_live_q", worker_id: "why-live-1", wait_ms: 5000 });
  assert.equal(claim.status, 200);
  assert.equal(claim.body?.id, t.id);
  await page.waitForSelector('[data-testid="why"][data-reason="running"]', { timeout: 8000 });
  assert.equal(await text(page, "why-worker"), "why-live-1");
  assert.deepEqual(page.errors, []);
  await page.close();
});
