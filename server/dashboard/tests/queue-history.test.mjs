// The queue view's charts of the last hour (GET /queues/{q}/history, P-OBS-5), from real
// traffic: tasks enqueued, claimed, completed and failed through HTTP show as the chart's
// points and legend numbers, and follow new traffic on the page's refresh cycle. A second
// test feeds a fixed history shape (the one mocked call) to check gaps and axis labels.
import assert from "node:assert/strict";
import { test } from "node:test";
import { eventually, openPage, screenshot, texts, useServerAndBrowser } from "./harness.mjs";

let server, browser;
useServerAndBrowser({}, (s, b) => ([server, browser] = [s, b]));

/** One series of a chart as drawn: its values per minute (null for a gap). */
const drawn = (page, chart, series) =>
  page.$eval(`[data-chart="${chart}"] [data-series="${series}"] path`, (p) =>
    p.dataset.values.split(",").map((v) => (v === "" ? null : Number(v))),
  );
const sum = (values) => values.reduce((n, v) => n + (v ?? 0), 0);
const lastNonNull = (values) => [...values].reverse().find((v) => v !== null) ?? null;

test("P-OBS-5: the queue view charts the last hour of real traffic and follows new traffic", async () => {
  const tasks = await server.enqueue(Array.from({ length: 4 }, (_, i) => ({ handler_name: "render_report", queue_name: "reports", params: { n: i } })));
  const batch = await server.api("POST", "/workers/tasks/poll/batch", { queue_name: "reports", worker_id: "reports-1", batch_size: 3, wait_ms: 0 });
  assert.equal(batch.body.tasks.length, 3);
  const [a, b, c] = batch.body.tasks;
  for (const t of [a, b]) assert.equal((await server.api("POST", `/workers/tasks/${t.id}/complete`, { lease_id: t.lease.id, output: {} })).status, 200);
  assert.equal((await server.api("POST", `/workers/tasks/${c.id}/fail`, { lease_id: c.lease.id, error: "template missing", retryable: false })).status, 200);

  const page = await openPage(browser, `${server.url}/ui/#/queues/reports`);
  // The server's window may be up to 5 s behind (P-OBS-5): wait for the counts to land.
  await page.waitForSelector('[data-note="completed"]:has-text("2 in 60 min")', { timeout: 15_000 });
  assert.match(await page.textContent('[data-note="enqueued"]'), /4 in 60 min/);
  assert.match(await page.textContent('[data-note="failed"]'), /1 in 60 min/);

  // The points are the API's, one per minute, and the bold number is the newest minute's.
  // A minute may turn between the page's read and ours (a CI failure: the same counts one
  // minute apart): compare a drawing and a history of the same minute, which the page's
  // refresh reaches within a cycle.
  let history, completed, xLabels;
  await eventually(async () => {
    history = (await server.api("GET", "/queues/reports/history")).body;
    completed = await drawn(page, "throughput", "completed");
    const enqueued = await drawn(page, "throughput", "enqueued");
    xLabels = await page.$$eval('[data-chart="throughput"] [data-x]', (els) => els.map((e) => e.dataset.x));
    return JSON.stringify([completed, enqueued, xLabels.at(-1)]) === JSON.stringify([
      history.points.map((p) => p.completed), history.points.map((p) => p.enqueued), history.points.at(-1).at]);
  }, "the drawn minutes are the API's", 15_000);
  assert.equal(history.points.length, 60);
  assert.equal(sum(completed), 2);
  assert.equal(await page.textContent('[data-latest="completed"]'), String(completed.at(-1)));
  // Round y ticks from 0 to at least the busiest minute; time labels end at the newest minute.
  const yTicks = (await texts(page, '[data-chart="throughput"] .tick-y text')).map(Number);
  assert.equal(yTicks[0], 0);
  assert.ok(yTicks.at(-1) >= Math.max(...completed, ...history.points.map((p) => p.enqueued)));
  assert.equal(xLabels.length, 4, "a label every 15 minutes of 60");

  // Depth: the one task left pending; wait: the three claims had a queue wait.
  await eventually(async () => lastNonNull(await drawn(page, "depth", "depth")) === 1, "depth 1 drawn", 15_000);
  assert.equal(await page.textContent('[data-latest="depth"]'), "1");
  assert.ok(lastNonNull(await drawn(page, "wait", "wait_p95_ms")) !== null, "a p95 wait is drawn");
  assert.match(await page.textContent('[data-latest="wait_p50_ms"]'), /^\d+(\.\d)? (ms|s)$/);
  await page.mouse.move(0, 0);
  await screenshot(page, "queue-view");

  // New traffic shows without reloading: the page's refresh cycle re-reads the history.
  const [d] = (await server.api("POST", "/workers/tasks/poll/batch", { queue_name: "reports", worker_id: "reports-1", batch_size: 1, wait_ms: 0 })).body.tasks;
  assert.equal(d.id, tasks[3].id);
  await server.api("POST", `/workers/tasks/${d.id}/complete`, { lease_id: d.lease.id, output: {} });
  await page.waitForSelector('[data-note="completed"]:has-text("3 in 60 min")', { timeout: 15_000 });
  assert.deepEqual(page.errors, []);
});

test("P-OBS-5: minutes without a sample are gaps, not zeros; the legend shows the newest sample", async () => {
  const minute = 60_000;
  const start = Math.floor(Date.now() / minute) * minute - 4 * minute;
  const points = [3, null, 7, 5, null].map((depth, i) => ({
    at: new Date(start + i * minute).toISOString(),
    enqueued: 10 * i, completed: 9 * i, failed: i === 2 ? 1 : 0, depth,
    wait_p50_ms: depth === null ? null : 4, wait_p95_ms: depth === null ? null : 1500,
  }));
  const page = await openPage(browser, "about:blank");
  // The one mocked call: a fixed history shape, so the drawing itself can be checked exactly.
  await page.route("**/queues/shaped/history", (route) =>
    route.fulfill({ json: { queue_name: "shaped", bucket_ms: minute, generated_at: new Date().toISOString(), points } }));
  await page.goto(`${server.url}/ui/#/queues/shaped`);
  await page.waitForSelector('[data-chart="depth"] path');
  assert.deepEqual(await drawn(page, "depth", "depth"), [3, null, 7, 5, null]);
  // Two runs of points: the pen lifts at each gap (a new "M"), never draws down to zero.
  const d = await page.getAttribute('[data-chart="depth"] path', "d");
  assert.equal((d.match(/M/g) ?? []).length, 2);
  assert.equal(await page.textContent('[data-latest="depth"]'), "5");
  assert.equal(await page.textContent('[data-latest="wait_p95_ms"]'), "1.5 s");
  assert.equal(await page.textContent('[data-latest="enqueued"]'), "40");
  assert.deepEqual((await texts(page, '[data-chart="depth"] .tick-y text')).map(Number), [0, 2, 4, 6, 8]);
});
