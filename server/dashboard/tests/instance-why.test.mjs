// The instance page's Why line and concurrency key (P-KEY-7): render tests answer
// GET /instances/{id} with tests/fixtures/instance-waiting.mjs (the real bundle, served by a
// real server); the live test starts two instances of a key of limit 1 on the real server.
import assert from "node:assert/strict";
import { test } from "node:test";
import { keylessInstance, startedInstance, waitingInstance } from "./fixtures/instance-waiting.mjs";
import { openPage, screenshot, useServerAndBrowser } from "./harness.mjs";

let server, browser;
useServerAndBrowser({}, (s, b) => ([server, browser] = [s, b]));

/** The instance page, GET /instances/{id} answered with whatever `pick()` returns at each load. */
async function show(id, pick) {
  const page = await openPage(browser, `${server.url}/ui/`);
  await page.waitForSelector("[data-role]");
  await page.route(`**/instances/${id}`, (route) => route.fulfill({ json: pick() }));
  await page.evaluate((i) => (location.hash = `#/instances/${i}`), id);
  await page.waitForSelector(`[data-testid="instance-id"]:text("${id}")`);
  return page;
}

const text = (page, id) => page.textContent(`[data-testid="${id}"]`);

test("a waiting instance: key full, running/cap instances of its key, the server's sentence, and its key", async () => {
  const page = await show(waitingInstance.id, () => waitingInstance);
  await page.waitForSelector('[data-testid="why"][data-reason="concurrency_key"]');
  assert.equal(await text(page, "why-badge"), "key full");
  assert.match(await page.getAttribute('[data-testid="why-badge"]', "class"), /why-time/);
  assert.equal(await text(page, "why-detail"), waitingInstance.waiting.detail);
  assert.equal(await text(page, "why-load"), "2/2");
  assert.equal(await text(page, "why-extra"), "2/2 instances of customer-42 running: it starts when one of them ends");
  assert.equal(await text(page, "instance-key"), "concurrency key customer-42 · at most 2 of it at once");
  await screenshot(page, "instance-why-waiting");
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("the Why line goes at the refresh once the instance starts; the key stays", async () => {
  let answer = waitingInstance;
  const page = await show(waitingInstance.id, () => answer);
  await page.waitForSelector('[data-testid="why"]');
  answer = startedInstance;
  await page.waitForSelector('[data-testid="why"]', { state: "detached", timeout: 8000 });
  assert.equal(await text(page, "instance-key"), "concurrency key customer-42 · at most 2 of it at once");
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("an instance without a key has no key line and no Why line", async () => {
  const page = await show(keylessInstance.id, () => keylessInstance);
  await page.waitForSelector('[data-testid="steps"]');
  assert.equal(await page.$('[data-testid="instance-key"]'), null);
  assert.equal(await page.$('[data-testid="why"]'), null);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("live: an instance started past its key's limit says so with the server's count, until the one ahead ends", async () => {
  const defined = await server.api("POST", "/sequences", { name: "why_inst", steps: [{ id: "only", handler: "why_inst" }] });
  assert.ok([200, 201].includes(defined.status), JSON.stringify(defined.body));
  const start = async () => {
    const res = await server.api("POST", "/instances", { sequence: "why_inst", concurrency_key: "acct-7" });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  };
  const first = await start();
  const second = await start();
  const page = await openPage(browser, `${server.url}/ui/#/instances/${second.id}`);
  await page.waitForSelector('[data-testid="why"][data-reason="concurrency_key"]');
  assert.equal(await text(page, "why-detail"), (await server.api("GET", `/instances/${second.id}`)).body.waiting.detail);
  assert.equal(await text(page, "why-load"), "1/1");
  assert.equal(await text(page, "instance-key"), "concurrency key acct-7 · at most 1 of it at once");
  assert.equal((await server.api("POST", `/instances/${first.id}/cancel`, {})).status, 200);
  await page.waitForSelector('[data-testid="why"]', { state: "detached", timeout: 8000 });
  assert.deepEqual(page.errors, []);
  await page.close();
});
