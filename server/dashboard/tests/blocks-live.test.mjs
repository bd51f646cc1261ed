// The instance page against the real server (contract 1.8.0): a block sequence with a
// router, a parallel, a try_catch whose catch runs, a race, a for_each and a sub_sequence,
// driven by the harness's raw HTTP worker, drawn live until it completes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { openPage, screenshot, texts, useServerAndBrowser } from "./harness.mjs";

let server, browser;
useServerAndBrowser({}, (s, b) => ([server, browser] = [s, b]));

const step = (id, handler, params) => ({ type: "step", id, handler, ...(params ? { params } : {}) });

async function define(body) {
  const res = await server.api("POST", "/sequences", body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

test("issue 31: a block sequence run by a raw worker is drawn block by block on the instance page", async () => {
  await define({ name: "notify_user", blocks: [step("send", "live_send")] });
  await define({
    name: "shop",
    blocks: [
      { type: "router", id: "plan", routes: [{ condition: 'context.data.plan == "pro"', blocks: [step("pro", "live_pro")] }], default: [step("free", "live_free")] },
      { type: "parallel", id: "enrich", branches: [[step("geo", "live_geo")], [step("credit", "live_credit")]] },
      { type: "try_catch", id: "pay", try_block: [step("charge", "live_charge")], catch_block: [step("note", "live_note", { why: "{{steps.charge.error.message}}" })], finally_block: [step("receipt", "live_receipt")] },
      { type: "race", id: "fastest", branches: [[step("mirror_a", "live_a")], [step("mirror_b", "live_b")]] },
      { type: "for_each", id: "items", collection: "context.data.items", body: [step("ship", "live_ship", { item: "{{item}}" })] },
      { type: "sub_sequence", id: "notify", sequence_name: "notify_user", input: { plan: "{{context.data.plan}}" } },
    ],
  });
  const started = await server.api("POST", "/instances", { sequence: "shop", context: { data: { plan: "pro", items: [1, 2, 3] } } });
  assert.equal(started.status, 201, JSON.stringify(started.body));
  const id = started.body.id;
  const page = await openPage(browser, `${server.url}/ui/#/instances/${id}`);
  await page.waitForSelector('[data-step="plan"]');

  await server.complete(await server.claim("live_pro"), { tier: "pro" });
  await Promise.all([server.claim("live_geo"), server.claim("live_credit")].map(async (t) => server.complete(await t, {})));
  await server.fail(await server.claim("live_charge"), "card declined", "declined");
  const note = await server.claim("live_note");
  assert.deepEqual(note.params, { why: "card declined" });
  await server.complete(note, {});
  await server.complete(await server.claim("live_receipt"), {});
  // The race: a wins; b's task is never claimed and is cancelled with its branch.
  await server.complete(await server.claim("live_a"), { mirror: "a" });
  for (let i = 0; i < 3; i++) await server.complete(await server.claim("live_ship"), {});
  await server.complete(await server.claim("live_send"), {});
  await page.waitForSelector('[data-testid="instance-status"] [data-status="completed"]', { timeout: 15_000 });

  const lanes = (key) => page.$$eval(`[data-group="${key}"] > [data-lane]`, (els) => els.map((e) => `${e.dataset.lane}:${e.dataset.laneState ?? ""}`));
  assert.deepEqual(await lanes("plan"), ["route:0:taken", "default:skipped"]);
  assert.equal(await page.textContent('[data-group="plan"] > [data-lane="route:0"] [data-testid="condition"]'), 'context.data.plan == "pro"');
  assert.equal(await page.$('[data-step="free"]'), null, "the route not taken ran nothing");
  assert.deepEqual(await lanes("enrich"), ["branch:0:", "branch:1:"]);
  assert.deepEqual(await lanes("pay"), ["try:", "catch:caught", "finally:"]);
  assert.equal(await page.getAttribute('[data-step="charge"]', "data-step-status"), "failed");
  assert.equal(await page.getAttribute('[data-step="pay"]', "data-step-status"), "completed");
  assert.deepEqual(await lanes("fastest"), ["branch:0:won", "branch:1:lost"]);
  assert.equal(await page.getAttribute('[data-step="mirror_b"]', "data-step-status"), "cancelled");
  assert.deepEqual(await texts(page, '[data-step="items"] [data-iter-count]'), ["3 completed"]);
  assert.deepEqual(await lanes("items"), ["iteration:0:iter-completed", "iteration:1:iter-completed", "iteration:2:iter-completed"]);
  assert.ok(await page.$('[data-step="items[1]/ship"]'));
  // An iteration's task says which run it is, on its page and in the task list.
  const shipTask = await page.getAttribute('[data-step="items[1]/ship"] [data-task-link]', "data-task-link");
  await page.click('[data-step="items[1]/ship"] [data-task-link]');
  assert.match(await (await page.waitForSelector('[data-testid="instance-link"]')).textContent(), new RegExp(`step items\\[1\\]/ship of workflow instance ${id}`));
  await page.goto(`${server.url}/ui/#/?range=all&instance=${id}&handler=live_ship`);
  await page.waitForSelector(`tr[data-task="${shipTask}"] td[data-step="items[1]/ship"]`);
  await page.goto(`${server.url}/ui/#/instances/${id}`);
  await screenshot(page, "instance-blocks-live");

  // The sub_sequence's child instance, one click away.
  await page.click('[data-step="notify"] [data-testid="child-instance"] a');
  await page.waitForSelector('[data-testid="instance-id"]:text("inst_")');
  assert.notEqual(await page.textContent('[data-testid="instance-id"]'), id);
  await page.waitForSelector('[data-step="send"][data-step-status="completed"]');
  assert.deepEqual(page.errors, []);
});
