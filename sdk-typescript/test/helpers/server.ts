// The REAL reference server for integration tests, started by the monorepo's one JS
// launcher (scripts/testing/launch-server.mjs: `--port 0`, reads the listening line). No
// port finding and no readiness polling here (issue 19). Never a fake: if the server is
// missing, tests fail and say so.
import { createServer, connect, type Server, type Socket } from "node:net";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Orch8Client, type Orch8ClientOptions } from "../../src/index.js";
// @ts-expect-error: plain .mjs without type declarations (the shared launcher is JS on purpose)
import { launchServer } from "../../../scripts/testing/launch-server.mjs";

export const SDK_DIR = resolve(fileURLToPath(new URL("../..", import.meta.url)));
export const REPO_ROOT = resolve(SDK_DIR, "..");

/** Short leases, fast reaper, fast worker heartbeats: tests see lease effects in seconds. */
export const FAST_FLAGS: Record<string, number> = {
  "lease-ms": 2000,
  "reaper-interval-ms": 100,
  "heartbeat-interval-ms": 300,
  "dead-after-ms": 3000,
};

interface Launched {
  url: string;
  port: number;
  halt(): Promise<void>;
  restart(): Promise<unknown>;
  stop(): Promise<void>;
  stderrTail(): string;
  process: { kill(signal: NodeJS.Signals): boolean } | null;
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
  private constructor(private readonly s: Launched) {}

  /** Starts a server with `flags` (default FAST_FLAGS) on a fresh SQLite file. */
  static async start(flags: Record<string, number | string> = FAST_FLAGS): Promise<TestServer> {
    const args = Object.entries(flags).flatMap(([k, v]) => [`--${k}`, String(v)]);
    return new TestServer(await launchServer({ args }) as Launched);
  }

  get url(): string {
    return this.s.url;
  }

  get port(): number {
    return this.s.port;
  }

  client(options: Orch8ClientOptions = {}): Orch8Client {
    return new Orch8Client({ baseUrl: this.url, ...options });
  }

  /** Stops and starts again on the same SQLite file and port, down for `downMs`. */
  async restart(downMs = 0): Promise<void> {
    await this.s.halt();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await this.s.restart();
  }

  /** SIGHUP: the server re-reads its keys file (P-AUTH-4). */
  hangup(): void {
    if (!this.s.process?.kill("SIGHUP")) throw new Error("the server is not running");
  }

  /** Stops the server and removes its database. */
  async dispose(): Promise<void> {
    await this.s.stop();
  }

  get output(): string {
    return this.s.stderrTail();
  }
}

/**
 * Forwards a fixed local port (the seed example hard-codes 3001) to `target`, waiting up to
 * `waitMs` while another process holds it. The fixed port is the example's, not found.
 */
export async function forwardPort(port: number, target: TestServer, waitMs: number): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const listen = () => new Promise<Server>((ok, fail) => {
    const srv = createServer((inbound) => {
      const outbound = connect(target.port, "127.0.0.1");
      for (const s of [inbound, outbound]) {
        sockets.add(s);
        s.on("close", () => sockets.delete(s));
        s.on("error", () => { inbound.destroy(); outbound.destroy(); });
      }
      inbound.pipe(outbound).pipe(inbound);
    });
    srv.once("error", fail);
    srv.listen(port, "127.0.0.1", () => ok(srv));
  });
  const srv = await waitFor(() => listen().catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "EADDRINUSE") throw err;
    return undefined;
  }), `port ${port} to be free`, waitMs, 500);
  return {
    close: () => new Promise<void>((ok) => {
      for (const s of sockets) s.destroy();
      srv.close(() => ok());
    }),
  };
}
