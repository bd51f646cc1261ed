// Starts the REAL reference server (../.venv/bin/orch8-server) on a free loopback port with
// a throwaway SQLite file, for integration tests. Never a fake: if it is missing, tests fail.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Orch8Client, type Orch8ClientOptions } from "../../src/index.js";

export const SDK_DIR = resolve(fileURLToPath(new URL("../..", import.meta.url)));
export const REPO_ROOT = resolve(SDK_DIR, "..");
export const SERVER_BIN = join(REPO_ROOT, ".venv", "bin", "orch8-server");

/** The flags of the common brief: short leases, fast reaper, fast worker heartbeats. */
export const FAST_FLAGS = {
  "lease-ms": 2000,
  "reaper-interval-ms": 100,
  "worker-heartbeat-ms": 300,
  "worker-dead-after-ms": 3000,
};

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolvePort(port));
    });
  });
}

/** Polls `check` until it returns a truthy value or the deadline passes. */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 10_000, everyMs = 25): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ""}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export class TestServer {
  readonly url: string;
  private proc: ChildProcess | undefined;
  private log = "";

  private constructor(readonly port: number, readonly db: string, private readonly dir: string, private readonly flags: Record<string, number>) {
    this.url = `http://127.0.0.1:${port}`;
  }

  /** Starts a server; fails with a clear message when the repo's server is not installed. */
  static async start(flags: Record<string, number> = FAST_FLAGS, port?: number): Promise<TestServer> {
    if (!existsSync(SERVER_BIN)) {
      throw new Error(`reference server not found at ${SERVER_BIN}: run \`make setup\` at the repo root`);
    }
    const dir = mkdtempSync(join(tmpdir(), "orch8-ts-"));
    const server = new TestServer(port ?? (await freePort()), join(dir, "orch8.db"), dir, flags);
    try {
      await server.boot();
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    return server;
  }

  /**
   * Starts a server on a fixed port (the seed example hard-codes 3001), waiting while
   * another process holds the port, e.g. another SDK's example test.
   */
  static async startOnPort(port: number, waitMs: number, flags: Record<string, number> = FAST_FLAGS): Promise<TestServer> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      try {
        return await TestServer.start(flags, port);
      } catch (err) {
        if (Date.now() > deadline || !existsSync(SERVER_BIN)) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  client(options: Orch8ClientOptions = {}): Orch8Client {
    return new Orch8Client({ baseUrl: this.url, ...options });
  }

  private async boot(): Promise<void> {
    const args = ["--db", this.db, "--host", "127.0.0.1", "--port", String(this.port)];
    for (const [k, v] of Object.entries(this.flags)) args.push(`--${k}`, String(v));
    const proc = spawn(SERVER_BIN, args, { stdio: ["ignore", "pipe", "pipe"] });
    this.proc = proc;
    proc.stdout?.on("data", (b: Buffer) => (this.log += b.toString()));
    proc.stderr?.on("data", (b: Buffer) => (this.log += b.toString()));
    try {
      await waitFor(async () => {
        if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}`);
        const res = await fetch(`${this.url}/health/ready`);
        return res.status === 200;
      }, `orch8-server on ${this.url} to be ready`, 20_000, 50);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- server log ---\n${this.log.slice(-3000)}`);
    }
  }

  /** SIGTERM, and wait for the process to exit. */
  async stop(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise<void>((r) => proc.once("exit", () => r()));
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }

  /** Stops and starts again on the same SQLite file and port. */
  async restart(downMs = 0): Promise<void> {
    await this.stop();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.boot();
  }

  /** Stops the server and removes its database. */
  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  get output(): string {
    return this.log;
  }
}
