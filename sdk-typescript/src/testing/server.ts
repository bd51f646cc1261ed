// startTestServer(): a throwaway reference server with the test clock (docs/protocol.md 17,
// P-CLOCK-1..5) for workflow tests. The server runs as a child process on a temp SQLite
// file; the test's handlers run in-process on the SDK's own Worker; time moves only when
// the test (or runInstance / runTask) says so, and only while those workers are idle.
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";
import { Orch8Client } from "../client.js";
import type { components } from "../generated/schema.js";
import type { Instance, Task } from "../types.js";
import { FINAL_INSTANCE_STATUSES, FINAL_TASK_STATUSES } from "../wait.js";
import type { Handler } from "../worker/executor.js";
import { Worker, type WorkerOptions } from "../worker/worker.js";

/** `GET /clock` and `POST /clock/advance` answers (P-CLOCK-1). */
export type Clock = components["schemas"]["Clock"];

/** Options of `startTestServer()`. */
export interface TestServerOptions {
  /** More server flags, e.g. `["--lease-ms", "5000"]`. */
  args?: string[];
  /** How long to wait for the server's listening line; default 30000 ms. */
  startTimeoutMs?: number;
  /** How long advance, skipToNextTimer and the runs wait for the workers to be idle; default 10000 ms. */
  idleTimeoutMs?: number;
}

/** Options of `runInstance` / `runTask`. */
export interface RunOptions {
  /** Wall time allowed for the whole run; default 30000 ms. */
  timeoutMs?: number;
  /** Options of the worker the run starts (not `handlers` or `client`). */
  worker?: TestWorkerOptions;
}

/** Worker options for a test worker; its client is the test server's. */
export type TestWorkerOptions = Omit<WorkerOptions, "handlers" | "client">;

const LISTENING_LINE = /^orch8-server listening on (http:\/\/\S+)$/;
// A skip of more than dead_after_ms declares the test's idle workers dead (P-WORKER-5), and
// an advance wakes parked polls before its dead-worker sweep, which would then reclaim a
// task claimed during the advance: 100 years of silence, so skipped time never does that.
// Give `--dead-after-ms` in `args` to test worker liveness.
const DEAD_AFTER_MS = "3153600000000";
const IDLE_POLL_MS = 10;
const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Starts `orch8-server --test-clock` on a temp SQLite file and port 0 and resolves once it
 * listens. The command is `ORCH8_SERVER` (split on spaces, e.g. `python -m orch8_server`),
 * else `orch8-server` on PATH. Call `close()` when done (e.g. in `after`).
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const [bin, ...pre] = serverCommand();
  const dir = mkdtempSync(join(tmpdir(), "orch8-test-server-"));
  // ORCH8_* of the test's environment (a URL, a database, keys) must not reach the server.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ORCH8_")));
  const args = [...pre, "--test-clock", "--db", join(dir, "orch8.db"), "--host", "127.0.0.1", "--port", "0", "--dead-after-ms", DEAD_AFTER_MS, ...(options.args ?? [])];
  const child = spawn(bin!, args, { env: { ...env, PYTHONUNBUFFERED: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  trackForExit(child);
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((ok) => child.once("close", () => ok()));
  try {
    const url = await listeningUrl(child, exited, options.startTimeoutMs ?? 30_000, () => stderr, `${bin} ${args.join(" ")}`);
    return new TestServer(url, child, exited, dir, options.idleTimeoutMs ?? 10_000);
  } catch (err) {
    child.kill("SIGKILL");
    await exited;
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** A running test server: its URL, a client, the clock and in-process workers. */
export class TestServer {
  /** An admin-capable client of this server (the server has no keys). */
  readonly client: Orch8Client;
  private readonly workers = new Map<Worker, string[]>();

  /** @internal Use startTestServer(). */
  constructor(
    readonly url: string,
    private readonly child: ChildProcess,
    private readonly exited: Promise<void>,
    private readonly dir: string,
    private readonly idleTimeoutMs: number,
  ) {
    this.client = new Orch8Client({ baseUrl: url });
  }

  /** Starts the SDK's Worker for `handlers` against this server, in the background, until close(). */
  startWorker(handlers: Record<string, Handler>, options: TestWorkerOptions = {}): Worker {
    const worker = new Worker({ handleSignals: false, ...options, handlers, client: this.client });
    this.workers.set(worker, Object.keys(handlers));
    void worker.run();
    return worker;
  }

  /** Moves the clock by `ms` once the workers are idle; resolves after every timer due has fired (P-CLOCK-2). */
  async advance(ms: number): Promise<Clock> {
    await this.idle();
    return this.client.advanceClock({ by_ms: ms });
  }

  /** Moves the clock to the next timer, if any, once the workers are idle (P-CLOCK-3). */
  async skipToNextTimer(): Promise<Clock> {
    await this.idle();
    return this.client.advanceClock({ to_next_timer: true });
  }

  /** The server's clock. */
  clock(): Promise<Clock> {
    return this.client.getClock();
  }

  /**
   * Runs `handlers` on a worker of its own until the instance is final, skipping to the next
   * timer whenever every worker is idle; resolves to the instance, whatever its status.
   */
  async runInstance(instanceId: string, handlers: Record<string, Handler>, options: RunOptions = {}): Promise<Instance> {
    const get = () => this.client.getInstance(instanceId);
    return this.runUntilFinal(`instance ${instanceId}`, get, (i) => FINAL_INSTANCE_STATUSES.has(i.status), handlers, options);
  }

  /** runInstance for one task: resolves to the task once completed, failed, cancelled or expired. */
  async runTask(taskId: string, handlers: Record<string, Handler>, options: RunOptions = {}): Promise<Task> {
    const get = () => this.client.getTask(taskId);
    return this.runUntilFinal(`task ${taskId}`, get, (t) => FINAL_TASK_STATUSES.has(t.status), handlers, options);
  }

  /** Stops the workers and the server and removes its database. */
  async close(): Promise<void> {
    await Promise.all([...this.workers.keys()].map((w) => w.stop()));
    this.workers.clear();
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await this.exited;
    clearTimeout(timer);
    live.delete(this.child);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async runUntilFinal<T>(what: string, get: () => Promise<T>, final: (value: T) => boolean,
    handlers: Record<string, Handler>, options: RunOptions): Promise<T> {
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    const worker = this.startWorker(handlers, options.worker);
    try {
      for (;;) {
        await this.idle(deadline);
        const state = await get();
        if (final(state)) return state;
        const clock = await this.client.getClock();
        if (clock.next_timer_at === null) {
          throw new Error(`${what} is not final, yet no worker of the test server holds a task, none is pending for ` +
            `[${this.handlerNames().join(", ")}] and no timer is due: does it wait for a handler not given? Last state: ${JSON.stringify(state)}`);
        }
        if (Date.now() > deadline) throw new Error(`${what} is not final after ${options.timeoutMs ?? 30_000} ms: ${JSON.stringify(state)}`);
        await this.client.advanceClock({ to_next_timer: true });
      }
    } finally {
      this.workers.delete(worker);
      await worker.stop();
    }
  }

  private handlerNames(): string[] {
    return [...new Set([...this.workers.values()].flat())].sort();
  }

  /**
   * P-CLOCK-3: skip time only while no worker holds a task and nothing is pending or running
   * for their handlers (a claim in flight, or a step a completion just dispatched).
   */
  private async idle(until = Date.now() + this.idleTimeoutMs): Promise<void> {
    const deadline = Math.min(until, Date.now() + this.idleTimeoutMs);
    for (;;) {
      const busy = await this.busy();
      if (busy === undefined) return;
      if (Date.now() > deadline) throw new Error(`the test server's workers are not idle after ${this.idleTimeoutMs} ms: ${busy}`);
      await new Promise((r) => setTimeout(r, IDLE_POLL_MS));
    }
  }

  /** Why the workers are not idle, or undefined when they are. */
  private async busy(): Promise<string | undefined> {
    const held = [...this.workers.keys()].reduce((n, w) => n + w.stats().in_flight, 0);
    if (held > 0) return `${held} task(s) held`;
    for (const handler_name of this.handlerNames()) {
      const [task] = (await this.client.listTasks({ status: ["pending", "running"], handler_name, limit: 1 })).tasks;
      if (task !== undefined) return `task ${task.id} (${handler_name}) is ${task.status}`;
    }
    return undefined;
  }
}

/** The server's command: ORCH8_SERVER, else orch8-server on PATH; a clear error otherwise. */
function serverCommand(): string[] {
  const given = process.env.ORCH8_SERVER?.trim();
  if (given) return given.split(/\s+/);
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, "orch8-server");
    try {
      accessSync(candidate, constants.X_OK);
      return [candidate];
    } catch {
      // not in this directory
    }
  }
  throw new Error("startTestServer: the reference server was not found: ORCH8_SERVER is not set and no orch8-server is on PATH. " +
    "Install it with `pip install orch8-server` (Python 3.11+, e.g. into a virtualenv whose bin/ is on PATH), " +
    "or set ORCH8_SERVER to its command, e.g. ORCH8_SERVER=\"/path/to/venv/bin/orch8-server\" or \"python -m orch8_server\".");
}

function listeningUrl(child: ChildProcess, exited: Promise<void>, timeoutMs: number, stderr: () => string, command: string): Promise<string> {
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${command} printed no listening line within ${timeoutMs} ms; stderr tail:\n${stderr()}`)), timeoutMs);
    // Keeps reading after the line, so the pipe never fills up.
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const match = LISTENING_LINE.exec(line);
      if (match) {
        clearTimeout(timer);
        ok(match[1]!);
      }
    });
    child.once("error", (err) => {
      clearTimeout(timer);
      fail(new Error(`startTestServer: cannot start ${command}: ${err.message} (set ORCH8_SERVER to the server's command, or \`pip install orch8-server\`)`));
    });
    void exited.then(() => {
      clearTimeout(timer);
      fail(new Error(`${command} exited (code ${child.exitCode}) before listening; stderr tail:\n${stderr()}`));
    });
  });
}

/** Servers a test forgot to close are killed when the process exits, so none is left behind. */
function trackForExit(child: ChildProcess): void {
  live.add(child);
  child.once("close", () => live.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const c of live) c.kill("SIGKILL");
  });
}
