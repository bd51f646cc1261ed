// How the page is served, the API-key prompt (P-AUTH-1), and the error state when the
// server goes away.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { REPO, eventually, launchBrowser, openPage, screenshot, startServer } from "./harness.mjs";

const KEY = "s3cret-operator-key";
let browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

test("the page is served without a key; the API asks for one and the UI keeps it for the tab", async () => {
  const server = await startServer({ apiKey: KEY });
  try {
    const root = await fetch(`${server.url}/`, { redirect: "manual" });
    assert.equal(root.status, 307);
    assert.equal(root.headers.get("location"), "/ui/");
    const html = await fetch(`${server.url}/ui/`);
    assert.equal(html.status, 200, "the static page needs no key");
    assert.match(html.headers.get("content-type"), /^text\/html/);
    assert.match(html.headers.get("content-security-policy"), /default-src 'none'/);
    const missing = await fetch(`${server.url}/ui/nope.js`);
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).code, "not_found");
    assert.equal((await fetch(`${server.url}/queues`)).status, 401, "the API itself still needs the key");

    await server.enqueue([{ handler_name: "nightly_export" }]);
    const page = await openPage(browser, `${server.url}/`);
    await page.waitForSelector("#api-key");
    await screenshot(page, "api-key-prompt", false);
    await page.fill("#api-key", "wrong-key");
    await page.click("#api-key-submit");
    await page.waitForSelector('.auth-card [data-code="unauthorized"]');
    await page.fill("#api-key", KEY);
    await page.click("#api-key-submit");
    await page.waitForSelector('.queue-row[data-handler="nightly_export"] [data-badge="stuck"]');
    await page.waitForSelector('tr[data-task] td:text("nightly_export")');
    assert.equal(await page.evaluate(() => sessionStorage.getItem("orch8.apiKey")), KEY);
    // A reload in the same tab reuses the key: no prompt.
    await page.reload();
    await page.waitForSelector('.queue-row[data-handler="nightly_export"]');
    assert.equal(await page.isVisible("#api-key"), false);
    await screenshot(page, "with-api-key", false);
    // Forgetting the key brings the prompt back.
    await page.click("#forget-key");
    await page.waitForSelector("#api-key");
    assert.equal(await page.evaluate(() => sessionStorage.getItem("orch8.apiKey")), null);
    assert.deepEqual(page.errors, []);
  } finally {
    await server.stop();
  }
});

test("an error state renders when the server is down, and clears when it is back", async () => {
  const server = await startServer();
  const [task] = await server.enqueue([{ handler_name: "sync_ledger" }]);
  const page = await openPage(browser, `${server.url}/ui/`);
  await page.waitForSelector(`tr[data-task="${task.id}"]`);
  assert.equal(await page.isVisible("#banner"), false);
  await server.halt();
  try {
    const banner = await page.waitForSelector("#banner:not([hidden])", { timeout: 10_000 });
    assert.match(await banner.textContent(), /Server unreachable\. Cannot reach the Orch8 server at http:\/\/127\.0\.0\.1:\d+/);
    // The page was opened with ?refresh=0.5 (openPage's default), and says so.
    assert.match(await banner.textContent(), /retrying every 0\.5 s\.$/);
    assert.equal(await page.getAttribute("#conn", "data-state"), "down");
    // The last data stays on screen, marked stale by the banner.
    assert.equal(await page.isVisible(`tr[data-task="${task.id}"]`), true);
    await screenshot(page, "server-down");

    // Opening a task while the server is down says so instead of showing an empty view.
    await page.click(`tr[data-task="${task.id}"] a`);
    const box = await page.waitForSelector('#detail .problem[data-code="connection_error"]');
    assert.match(await box.textContent(), /Could not load the task: cannot reach the server/);

    await server.restart();
    await page.waitForSelector("#banner", { state: "hidden", timeout: 10_000 });
    await page.waitForSelector('[data-testid="task-status"] [data-status="pending"]');
    assert.equal(await page.getAttribute("#conn", "data-state"), "up");
  } finally {
    await server.stop();
  }
});

test("?refresh= sets the refresh period; out of range or not a number keeps 3 s", async () => {
  const server = await startServer();
  try {
    for (const [refresh, said] of [["10", "10"], ["0.5", "0.5"], ["0.1", "3"], ["301", "3"], ["soon", "3"], [null, "3"]]) {
      const page = await openPage(browser, `${server.url}/ui/`, { refresh });
      await page.waitForSelector('#conn[data-state="up"]');
      assert.equal(await page.getAttribute("#conn", "title"), `refreshes every ${said} s`, `?refresh=${refresh}`);
      await page.context().close();
    }
  } finally {
    await server.stop();
  }
});

test("the bundle loads nothing from outside: no CDN, no external fonts", async () => {
  const dir = join(REPO, "server/orch8_server/ui");
  for (const name of readdirSync(dir)) {
    const text = readFileSync(join(dir, name), "utf8");
    assert.doesNotMatch(text, /(src|href)\s*=\s*["']?(https?:)?\/\//i, `${name} references another origin`);
    assert.doesNotMatch(text, /@import|url\(\s*["']?(https?:)?\/\//i, `${name} imports a remote resource`);
  }
  const server = await startServer();
  try {
    const page = await openPage(browser, `${server.url}/ui/`);
    await page.waitForSelector("#queues .empty-state");
    await eventually(() => page.requests.some((u) => u.includes("/tasks?")), "the task list was requested");
    const foreign = page.requests.filter((u) => !u.startsWith(server.url) && !u.startsWith("data:"));
    assert.deepEqual(foreign, []);
  } finally {
    await server.stop();
  }
});
