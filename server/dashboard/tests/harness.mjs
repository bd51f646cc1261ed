// Shared by the browser tests: a real orch8-server on loopback (temp SQLite file), a real
// headless Chromium (Debian's package) driven by playwright-core, and small helpers.
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { launchServer, REPO } from "../../../scripts/testing/launch-server.mjs";

export { REPO };
export const ARTIFACTS = join(REPO, "test-artifacts/dashboard");
const CHROMIUM = "/usr/bin/chromium";

/** Poll `check` until it returns a truthy value; fail with `what` after `timeoutMs`. */
export async function eventually(check, what, timeoutMs = 10_000, intervalMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await check();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms (last: ${last})`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Start a real orch8-server (shared launcher, temp SQLite file) with the timings the
 * dashboard tests need, plus API helpers.
 */
export async function startServer({ apiKey } = {}) {
  const args = ["--max-wait-ms", "20000", "--reaper-interval-ms", "200",
    "--heartbeat-interval-ms", "1000", "--dead-after-ms", "60000"];
  if (apiKey) args.push("--api-key", apiKey);
  const server = await launchServer({ args });
  return Object.assign(server, {
    /** Call the API directly (the tests' own view of the truth). */
    async api(method, path, body) {
      const headers = { "Content-Type": "application/json" };
      if (apiKey) headers.Authorization = `Bearer ${apiKey}`;
      const res = await fetch(server.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    async enqueue(tasks) {
      const res = await server.api("POST", "/tasks/batch", { tasks });
      if (res.status !== 201) throw new Error(`enqueue: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.tasks;
    },
    // halt() keeps the database; restart() starts again on the same port and database.
  });
}

/** Headless Chromium from Debian (never a downloaded browser build). */
export async function launchBrowser() {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run \`make setup\` (as root it installs chromium)`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  return browser;
}

/** A fresh page at 1280 px wide that records every request it makes and every console error. */
export async function openPage(browser, url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  page.requests = [];
  page.errors = [];
  page.on("request", (r) => page.requests.push(r.url()));
  page.on("pageerror", (e) => page.errors.push(String(e)));
  await page.goto(url);
  return page;
}

export async function screenshot(page, name, fullPage = true) {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage });
}

/** The texts of every element matching `selector`, in order. */
export function texts(page, selector) {
  return page.$$eval(selector, (els) => els.map((e) => e.textContent.trim()));
}
