// Operator actions from the UI, checked through the API: manual complete and fail
// (P-MANUAL-1), cancel, retry, a readable problem+json when the task changed meanwhile,
// and the worker directives quiet / resume / terminate (P-WORKER-4).
import assert from "node:assert/strict";
import { test } from "node:test";
import { eventually, openPage, screenshot, useServerAndBrowser } from "./harness.mjs";

let server, browser;
useServerAndBrowser({}, (s, b) => ([server, browser] = [s, b]));

const status = async (id) => (await server.api("GET", `/tasks/${id}`)).body.status;
const detail = (id) => openPage(browser, `${server.url}/ui/#/tasks/${id}`);

test("complete a running task by hand from its detail view", async () => {
  const [task] = await server.enqueue([{ handler_name: "approve_order", params: { order: 42, amount: "19.90" }, context: { instance_id: "inst_7" } }]);
  const claim = await server.api("POST", "/workers/tasks/poll", { handler_names: ["approve_order"], worker_id: "orders-1", wait_ms: 0 });
  assert.equal(claim.status, 200);
  await server.api("POST", `/workers/tasks/${task.id}/heartbeat`, { checkpoint: { step: "fraud-check" }, progress: { percent: 40 } });

  const page = await openPage(browser, `${server.url}/ui/`);
  await page.click(`tr[data-task="${task.id}"] a`);
  await page.waitForSelector('[data-testid="task-status"] [data-status="running"]');
  assert.match(await page.textContent('[data-fact="lease"]'), /orders-1 · attempt 1 · expires in/);
  assert.match(await page.textContent('[data-testid="params"]'), /"order": 42/);
  assert.match(await page.textContent('[data-testid="context"]'), /inst_7/);
  assert.match(await page.textContent('[data-testid="checkpoint"]'), /fraud-check/);
  assert.match(await page.textContent('[data-testid="attempts"]'), /#1\s*running\s*orders-1/);
  assert.equal(await page.isDisabled('[data-action="retry"]'), true, "retry is not offered for a running task");

  // Two steps: the first click only opens the confirmation.
  await page.click('[data-action="complete"]');
  await page.waitForSelector('[data-testid="confirm"]');
  assert.equal(await status(task.id), "running", "nothing happens before confirming");
  await page.fill('[data-testid="confirm"] textarea[name="output"]', '{"approved": true, "by": "ops"}');
  await page.fill('[data-testid="confirm"] input[name="reason"]', "approved by hand");
  await screenshot(page, "task-detail-confirm");
  await page.click('[data-confirm="complete"]');
  await page.waitForSelector('[data-testid="task-status"] [data-status="completed"]', { timeout: 5000 });

  const after = (await server.api("GET", `/tasks/${task.id}`)).body;
  assert.equal(after.status, "completed");
  assert.deepEqual(after.output, { approved: true, by: "ops" });
  // P-MANUAL-1: the worker's attempt ended cancelled; its own complete is refused.
  const attempts = (await server.api("GET", `/tasks/${task.id}/attempts`)).body.attempts;
  assert.equal(attempts[0].outcome, "cancelled");
  const late = await server.api("POST", `/workers/tasks/${task.id}/complete`, { lease_id: claim.body.lease.id, output: {} });
  assert.equal(late.status, 409);
  assert.match(await page.textContent('[data-testid="output"]'), /"by": "ops"/);
  assert.match(await page.textContent('[data-testid="attempts"]'), /#1\s*cancelled/);
  await screenshot(page, "task-detail-completed");
  assert.deepEqual(page.errors, []);
});

test("fail by hand, then retry; invalid JSON output is caught before sending", async () => {
  const [task] = await server.enqueue([{ handler_name: "charge_card" }]);
  const page = await detail(task.id);
  await page.waitForSelector('[data-testid="task-status"] [data-status="pending"]');
  await page.click('[data-action="complete"]');
  await page.fill('textarea[name="output"]', "{not json");
  await page.click('[data-confirm="complete"]');
  await page.waitForSelector("text=the output is not valid JSON");
  assert.equal(await status(task.id), "pending");

  await page.click('[data-action="fail"]');
  await page.fill('input[name="error"]', "card expired");
  // A code over the contract's 200 characters: the 422 lists the field by its pointer.
  await page.fill('input[name="code"]', "x".repeat(201));
  await page.click('[data-confirm="fail"]');
  const invalid = await page.waitForSelector('[data-testid="confirm"] .problem[data-code="validation_error"]');
  assert.match(await invalid.textContent(), /Could not fail the task: Validation failed\s*422 · validation_error/);
  assert.equal(await invalid.$eval(".problem-errors code", (c) => c.textContent), "/code");
  assert.equal(await status(task.id), "pending");
  await screenshot(page, "problem-validation");
  await page.fill('input[name="code"]', "card_expired");
  await page.click('[data-confirm="fail"]');
  await page.waitForSelector('[data-testid="task-status"] [data-status="failed"]');
  assert.equal(await page.textContent(".notice"), "Done: task failed by hand.");
  const failed = (await server.api("GET", `/tasks/${task.id}`)).body;
  assert.equal(failed.error.code, "card_expired");
  assert.match(await page.textContent('[data-testid="task-error"]'), /card_expired[\s\S]*card expired/);
  await screenshot(page, "task-detail-failed");

  await page.click('[data-action="retry"]');
  await page.click('[data-confirm="retry"]');
  await page.waitForSelector('[data-testid="task-status"] [data-status="pending"]');
  assert.equal(await status(task.id), "pending");
});

test("a conflict from the server renders as a readable problem, and cancel works", async () => {
  const [task] = await server.enqueue([{ handler_name: "ship_parcel" }]);
  const page = await detail(task.id);
  await page.waitForSelector('[data-testid="task-status"] [data-status="pending"]');
  await page.click('[data-action="cancel"]');
  await page.fill('input[name="reason"]', "customer withdrew");
  // Someone else completes the task while the operator is confirming.
  assert.equal((await server.api("POST", `/tasks/${task.id}/complete`, { output: { shipped: true } })).status, 200);
  await page.click('[data-confirm="cancel"]');
  const box = await page.waitForSelector('[data-testid="confirm"] .problem[data-code="invalid_state"]');
  const text = await box.textContent();
  assert.match(text, /Could not cancel the task: Invalid state/);
  assert.match(text, /409 · invalid_state/);
  await screenshot(page, "problem-conflict");
  assert.equal(await status(task.id), "completed", "the task is unchanged");

  const [other] = await server.enqueue([{ handler_name: "ship_parcel" }]);
  const page2 = await detail(other.id);
  await page2.waitForSelector('[data-action="cancel"]:not([disabled])');
  await page2.click('[data-action="cancel"]');
  await page2.fill('input[name="reason"]', "customer withdrew");
  await page2.click('[data-confirm="cancel"]');
  await page2.waitForSelector('[data-testid="task-status"] [data-status="cancelled"]');
  const cancelled = (await server.api("GET", `/tasks/${other.id}`)).body;
  assert.equal(cancelled.status, "cancelled");
  assert.equal(cancelled.cancel_reason, "customer withdrew");
});

test("worker table: quiet, resume, and terminate after a second click", async () => {
  const reg = await server.api("POST", "/workers", { worker_id: "img-worker-1", hostname: "web-01", pid: 4242, handlers: ["process_image"], concurrency: 8, sdk: "orch8-python/0.1.0" });
  assert.equal(reg.status, 200);
  const directive = async () => (await server.api("GET", "/workers/img-worker-1")).body.directive;
  const page = await openPage(browser, `${server.url}/ui/`);
  const row = 'tr[data-worker="img-worker-1"]';
  await page.waitForSelector(row);
  assert.match(await page.textContent(`${row} [data-testid="in-flight"]`), /0\s*\/ 8/);

  await page.click(`${row} button:text("Quiet")`);
  await eventually(async () => (await directive()) === "quiet", "directive quiet");
  await page.waitForSelector(`${row} [data-directive="quiet"]`);
  await page.click(`${row} button:text("Resume")`);
  await eventually(async () => (await directive()) === "running", "directive running");

  await page.click(`${row} button:text("Terminate")`);
  await page.waitForSelector(`${row} button:text("Confirm terminate")`);
  assert.equal(await directive(), "running", "one click does not terminate");
  await screenshot(page, "workers");
  await page.click(`${row} button:text("Confirm terminate")`);
  await eventually(async () => (await directive()) === "terminate", "directive terminate");
  assert.deepEqual(page.errors, []);
});
