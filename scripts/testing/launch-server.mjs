// The ONE JavaScript launcher of the monorepo for a real orch8-server (sdk-typescript tests,
// dashboard browser tests). Plain ESM, no dependencies. See scripts/testing/README.md.
//
//   import { launchServer } from "../../scripts/testing/launch-server.mjs";
//   const server = await launchServer({ args: ["--lease-ms", "2000"] });
//   await fetch(`${server.url}/health/ready`);
//   await server.stop();
//
// The server is started with `--port 0` and prints exactly one stdout line,
// `orch8-server listening on http://HOST:PORT`, once it accepts requests: the promise
// resolves on that line (no port race, no readiness polling).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const LISTENING_LINE = /^orch8-server listening on (http:\/\/(.+):(\d+))$/;

/** The server binary: `bin`, else $ORCH8_SERVER_BIN, else the repo venv's orch8-server. */
export function serverBin(bin) {
  return bin ?? process.env.ORCH8_SERVER_BIN ?? join(REPO, ".venv/bin/orch8-server");
}

/**
 * Start `orch8-server --port 0` and resolve `{url, port, host, db, process, stop(), kill(),
 * halt(), restart(), stderrTail()}` once its listening line appears.
 *
 * options.args: extra server flags; options.db: SQLite path or postgresql:// URL (default: a
 * new SQLite file in a temp dir that stop() removes); options.env: added to this process's
 * environment minus its ORCH8_* variables; options.bin: see serverBin; options.timeoutMs.
 */
export async function launchServer(options = {}) {
  const { args = [], env = {}, timeoutMs = 30_000, host = "127.0.0.1" } = options;
  const bin = serverBin(options.bin);
  if (!existsSync(bin)) {
    throw new Error(`${bin} is missing: run \`make setup\` at the repo root, or set ORCH8_SERVER_BIN`);
  }
  const dir = options.db === undefined ? mkdtempSync(join(tmpdir(), "orch8-server-")) : null;
  const db = options.db ?? join(dir, "orch8.db");
  const fullEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ORCH8_")));
  Object.assign(fullEnv, env, { PYTHONUNBUFFERED: "1" });
  let stderr = "";
  let exited = Promise.resolve();

  const server = {
    url: "",
    port: 0,
    host,
    db,
    process: null,
    /** The end of the server's stderr (JSON logs), for error messages. */
    stderrTail: () => stderr,
    /** SIGTERM (graceful drain), wait up to `graceMs`, then SIGKILL. Keeps the database. */
    async halt(graceMs = 15_000) {
      const proc = server.process;
      if (!proc) return;
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
    /** SIGKILL, like a crash; keeps the database. */
    async kill() {
      const proc = server.process;
      if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
      await exited;
    },
    /** Start again on the same database and port, so `url` stays valid. */
    async restart() {
      await server.halt();
      return launch(server.port);
    },
    /** halt() and delete the temp dir the launcher made. */
    async stop() {
      await server.halt();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };

  function launch(port) {
    const proc = spawn(bin, ["--db", db, "--host", host, ...args.map(String), "--port", String(port)], {
      env: fullEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    server.process = proc;
    exited = new Promise((ok) => proc.once("close", ok));
    proc.stderr.on("data", (d) => (stderr = (stderr + d).slice(-4000)));
    return new Promise((ok, fail) => {
      const timer = setTimeout(() => {
        proc.kill("SIGKILL");
        fail(new Error(`orch8-server printed no listening line within ${timeoutMs} ms; stderr tail:\n${stderr}`));
      }, timeoutMs);
      // Keeps reading after the line so the pipe never fills up.
      createInterface({ input: proc.stdout }).on("line", (line) => {
        const match = LISTENING_LINE.exec(line);
        if (!match) return;
        clearTimeout(timer);
        Object.assign(server, { url: match[1], host: match[2], port: Number(match[3]) });
        ok(server);
      });
      proc.once("error", (err) => {
        clearTimeout(timer);
        fail(new Error(`cannot start ${bin}: ${err.message}`));
      });
      exited.then((code) => {
        clearTimeout(timer);
        fail(new Error(`orch8-server exited (code ${code}) before listening; stderr tail:\n${stderr}`));
      });
    });
  }

  return launch(0);
}
