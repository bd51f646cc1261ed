// Shared by the browser tests: a real orch8-server on loopback (temp SQLite file), a real
// headless Chromium (Debian's package) driven by playwright-core, and small helpers.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(here, "../../..");
export const ARTIFACTS = join(REPO, "test-artifacts/dashboard");
const PYTHON = join(REPO, ".venv/bin/python");
const CHROMIUM = "/usr/bin/chromium";

function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

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
 * Start `python -m orch8_server` on a free port and a temp SQLite file; resolves once
 * /health/ready answers 200.
 */
export async function startServer({ apiKey } = {}) {
  if (!existsSync(PYTHON)) throw new Error(`${PYTHON} is missing: run \`make setup\` at the repo root`);
  const dir = mkdtempSync(join(tmpdir(), "orch8-dashboard-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = ["-m", "orch8_server", "--db", join(dir, "orch8.db"), "--host", "127.0.0.1", "--port", String(port),
    "--max-wait-ms", "20000", "--reaper-interval-ms", "200", "--worker-heartbeat-ms", "1000", "--worker-dead-after-ms", "60000"];
  if (apiKey) args.push("--api-key", apiKey);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ORCH8_")));
  let proc = null;
  let exited = null;
  async function launch() {
    proc = spawn(PYTHON, args, { env, stdio: ["ignore", "ignore", "pipe"] });
    let log = "";
    proc.stderr.on("data", (d) => (log = (log + d).slice(-4000)));
    exited = new Promise((r) => proc.once("exit", r));
    await eventually(async () => {
      if (proc.exitCode !== null) throw new Error(`server exited ${proc.exitCode}: ${log}`);
      const res = await fetch(`${url}/health/ready`).catch(() => null);
      return res?.status === 200;
    }, "server ready", 20_000).catch((err) => {
      proc.kill("SIGKILL");
      throw err;
    });
  }
  async function halt() {
    if (proc.exitCode === null) proc.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (proc.exitCode === null) proc.kill("SIGKILL");
    await exited;
  }
  await launch();
  const server = {
    url,
    /** Call the API directly (the tests' own view of the truth). */
    async api(method, path, body) {
      const headers = { "Content-Type": "application/json" };
      if (apiKey) headers.Authorization = `Bearer ${apiKey}`;
      const res = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    async enqueue(tasks) {
      const res = await server.api("POST", "/tasks/batch", { tasks });
      if (res.status !== 201) throw new Error(`enqueue: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.tasks;
    },
    /** Stop the process but keep its database, for `restart`. */
    halt,
    /** Start again on the same port and database file. */
    restart: launch,
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
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
