// Shared by the browser tests: a real orch8-server on loopback (temp SQLite file), a real
// headless Chromium (Debian's package) driven by playwright-core, and small helpers.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
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

/** The secret the tests use for the keys-file entry `id`. */
export const secretOf = (id) => `secret-of-${id}`;

/**
 * A keys file (P-AUTH-4) for `keys` = {id: {role, tenant, tenants?}}: one [[key]] per id,
 * holding the hex SHA-256 of secretOf(id), never the secret.
 */
export function keysToml(keys) {
  const list = (v) => `[${v.map((s) => JSON.stringify(s)).join(", ")}]`;
  return Object.entries(keys)
    .map(([id, k]) => [
      "[[key]]",
      `id = ${JSON.stringify(id)}`,
      `sha256 = "${createHash("sha256").update(secretOf(id)).digest("hex")}"`,
      `role = ${JSON.stringify(k.role)}`,
      `tenant = ${JSON.stringify(k.tenant ?? "default")}`,
      k.tenants ? `tenants = ${list(k.tenants)}` : null,
    ].filter(Boolean).join("\n"))
    .join("\n\n") + "\n";
}

/**
 * Start a real orch8-server (shared launcher, temp SQLite file) with the timings the
 * dashboard tests need, plus API helpers. `apiKey` adds an env (admin) key; `keys` a keys
 * file (see keysToml; `server.rewriteKeys(keys)` replaces it and sends SIGHUP); `args`
 * more options (a later option wins).
 */
export async function startServer({ apiKey, keys, args: extra = [] } = {}) {
  const args = ["--max-wait-ms", "20000", "--reaper-interval-ms", "200",
    "--heartbeat-interval-ms", "1000", "--dead-after-ms", "60000", ...extra];
  if (apiKey) args.push("--api-key", apiKey);
  let keysDir = null;
  if (keys) {
    keysDir = mkdtempSync(join(tmpdir(), "orch8-dashboard-keys-"));
    writeFileSync(join(keysDir, "keys.toml"), keysToml(keys));
    args.push("--keys-file", join(keysDir, "keys.toml"));
  }
  // The tests' own calls: the env key, else the file's first admin key.
  const adminId = keys && Object.keys(keys).find((id) => keys[id].role === "admin");
  const ownKey = apiKey ?? (adminId ? secretOf(adminId) : undefined);
  const server = await launchServer({ args });
  const stop = server.stop;
  return Object.assign(server, {
    /** Call the API directly (the tests' own view of the truth); `as.key` / `as.tenant` override. */
    async api(method, path, body, as = {}) {
      const headers = { "Content-Type": "application/json" };
      const key = as.key ?? ownKey;
      if (key) headers.Authorization = `Bearer ${key}`;
      if (as.tenant) headers["X-Tenant-Id"] = as.tenant;
      const res = await fetch(server.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    /** A raw HTTP worker: claim the one task of `handler` (long poll), then complete or fail it. */
    async claim(handler, as = {}) {
      const res = await server.api("POST", "/workers/tasks/poll", { handler_names: [handler], wait_ms: 5000 }, as);
      if (res.status !== 200) throw new Error(`poll ${handler}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    async complete(task, output, as = {}) {
      const res = await server.api("POST", `/workers/tasks/${task.id}/complete`, { lease_id: task.lease.id, output }, as);
      if (res.status !== 200) throw new Error(`complete ${task.id}: ${res.status} ${JSON.stringify(res.body)}`);
    },
    async fail(task, error, code, as = {}) {
      const res = await server.api("POST", `/workers/tasks/${task.id}/fail`, { lease_id: task.lease.id, error, code, retryable: false }, as);
      if (res.status !== 200) throw new Error(`fail ${task.id}: ${res.status} ${JSON.stringify(res.body)}`);
    },
    async enqueue(tasks, as = {}) {
      const res = await server.api("POST", "/tasks/batch", { tasks }, as);
      if (res.status !== 201) throw new Error(`enqueue: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.tasks;
    },
    /** Replace the keys file and send SIGHUP (the server re-reads it, P-AUTH-4). */
    rewriteKeys(newKeys) {
      writeFileSync(join(keysDir, "keys.toml"), keysToml(newKeys));
      server.process.kill("SIGHUP");
    },
    async stop() {
      await stop();
      if (keysDir) rmSync(keysDir, { recursive: true, force: true });
    },
    // halt() keeps the database; restart() starts again on the same port and database.
  });
}

/**
 * A server (started with `options`) and a browser for one test file: both started before its
 * first test and stopped after its last. `keep(server, browser)` is called once both are up,
 * so the file holds them in its own variables.
 */
export function useServerAndBrowser(options, keep) {
  let server, browser;
  before(async () => {
    [server, browser] = await Promise.all([startServer(options), launchBrowser()]);
    keep(server, browser);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
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

/**
 * A fresh page at 1280 px wide that records every request it makes and every console error.
 * `apiKey` is put where the dashboard keeps the key (sessionStorage) before the page loads.
 */
export async function openPage(browser, url, { apiKey, refresh = "0.5" } = {}) {
  // The page's own refresh (?refresh=<seconds>, 3 s by default): 0.5 s here, so a test
  // waiting for the page to follow the server waits a fraction of the default cycle.
  const address = new URL(url);
  if (refresh !== null && !address.searchParams.has("refresh")) address.searchParams.set("refresh", refresh);
  url = address.toString();
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  if (apiKey) await context.addInitScript((key) => sessionStorage.setItem("orch8.apiKey", key), apiKey);
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
