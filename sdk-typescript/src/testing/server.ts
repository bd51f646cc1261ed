// startTestServer(): a throwaway reference server with the test clock (docs/protocol.md 17,
// P-CLOCK-1..5) for workflow tests. The server runs as a child process on a temp SQLite
// file; the test's handlers run in-process on the SDK's own Worker; time moves only when
// the test (or runUntilFinal) says so, and only while nothing runs (P-CLOCK-3).
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";
import { Orch8Client } from "../client.js";
import type { components } from "../generated/schema.js";
import type { Instance, Task } from "../types.js";
import { FINAL_INSTANCE_STATUSES, FINAL_TASK_STATUSES } from "../wait.js";
import { Worker, type WorkerOptions } from "../worker/worker.js";

/** `GET /clock` and `POST /clock/advance` answers (P-CLOCK-1). */
export type Clock = components["schemas"]["Clock"];

/** Options of `startTestServer()`. */
export interface TestServerOptions {
  /** More server flags, e.g. `["--lease-ms", "5000"]`. */
  args?: string[];
  /** How long to wait for the server's listening line; default 30000 ms. */
  startTimeoutMs?: number;
  /** How long advance and skipToNextTimer wait for the workers to be idle; default 30000 ms. */
  idleTimeoutMs?: number;
}

/** Options of `runUntilFinal`. */
export interface RunOptions {
  /** Wall time allowed for the whole run; default 30000 ms. */
  timeoutMs?: number;
}

/** What `runUntilFinal` runs to: an instance or a task. */
export type RunTarget = { instanceId: string } | { taskId: string };

/** Options of a test worker: a Worker's, whose client is the test server's (no signal handlers by default). */
export type TestWorkerOptions = Omit<WorkerOptions, "client">;

const LISTENING_LINE = /^orch8-server listening on (http:\/\/\S+)$/;
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
  const args = [...pre, "--test-clock", "--db", join(dir, "orch8.db"), "--host", "127.0.0.1", "--port", "0", ...(options.args ?? [])];
  const child = spawn(bin!, args, { env: { ...env, PYTHONUNBUFFERED: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  trackForExit(child);
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((ok) => child.once("close", () => ok()));
  try {
    const url = await listeningUrl(child, exited, options.startTimeoutMs ?? 30_000, () => stderr, `${bin} ${args.join(" ")}`);
    const server = new TestServer(url, child, exited, dir, options.idleTimeoutMs ?? 30_000);
    // The server's first task listing takes up to a second (its first use of that path):
    // paid here, at start-up, rather than by the test's first idle check.
    await server.waitIdle();
    return server;
  } catch (err) {
    child.kill("SIGKILL");
    await exited;
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** A running test server: its URL, a client, the clock and in-process workers. */
export class TestServer {
  /** A client of this server, which has no keys: it may move the clock (P-CLOCK-4). */
  readonly client: Orch8Client;
  // What each worker built here claims, for the idle check: handler names and queues.
  private readonly claims = new WeakMap<Worker, { handlers: Set<string>; queues: Set<string> }>();
  private readonly running = new Set<Worker>();

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

  /** The SDK's Worker on this server, not started; no signal handlers unless asked. */
  worker(options: TestWorkerOptions): Worker {
    const worker = new Worker({ handleSignals: false, ...options, client: this.client });
    const queues = options.queueNames ?? [options.queueName ?? "default"];
    this.claims.set(worker, { handlers: new Set(Object.keys(options.handlers)), queues: new Set(queues) });
    return worker;
  }

  /** Runs a worker of `worker()` in the background until it stops or close(). */
  startWorker(worker: Worker): Worker {
    if (!this.claims.has(worker)) throw new TypeError("startWorker takes a worker made by this test server's worker()");
    this.running.add(worker);
    void worker.run().finally(() => this.running.delete(worker));
    return worker;
  }

  /** The server's clock: `now` and `next_timer_at` (null when no timer is set). */
  clock(): Promise<Clock> {
    return this.client.getClock();
  }

  /** Moves the clock by `ms` once the workers are idle; resolves after every timer due has fired (P-CLOCK-2). */
  async advance(ms: number): Promise<Clock> {
    await this.waitIdle();
    return this.client.advanceClock({ by_ms: ms });
  }

  /** Moves the clock to the next timer, if any, once the workers are idle (P-CLOCK-3). */
  async skipToNextTimer(): Promise<Clock> {
    await this.waitIdle();
    return this.client.advanceClock({ to_next_timer: true });
  }

  /**
   * P-CLOCK-3: resolves once no task is running and none is pending that a running worker
   * claims (a claim in flight, a step a completion just dispatched): a skip then loses no work.
   */
  async waitIdle(options: { timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = options.timeoutMs ?? this.idleTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const busy = await this.busy();
      if (busy === undefined) return;
      if (Date.now() > deadline) throw new Error(`the test server is not idle after ${timeoutMs} ms: ${busy}`);
      await new Promise((r) => setTimeout(r, IDLE_POLL_MS));
    }
  }

  /**
   * Runs `worker` (of `worker()`) until the instance or task is final, skipping to the next
   * timer whenever all is idle, then stops it; resolves to the instance (task), whatever its status.
   */
  runUntilFinal(worker: Worker, target: { instanceId: string }, options?: RunOptions): Promise<Instance>;
  runUntilFinal(worker: Worker, target: { taskId: string }, options?: RunOptions): Promise<Task>;
  async runUntilFinal(worker: Worker, target: RunTarget, options: RunOptions = {}): Promise<Instance | Task> {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const deadline = Date.now() + timeoutMs;
    const [what, get] = "instanceId" in target
      ? [`instance ${target.instanceId}`, async () => final(await this.client.getInstance(target.instanceId), FINAL_INSTANCE_STATUSES)]
      : [`task ${target.taskId}`, async () => final(await this.client.getTask(target.taskId), FINAL_TASK_STATUSES)];
    this.startWorker(worker);
    try {
      for (;;) {
        await this.waitIdle({ timeoutMs: Math.max(0, deadline - Date.now()) });
        const [state, done] = await get();
        if (done) return state;
        if ((await this.clock()).next_timer_at === null) {
          throw new Error(`${what} is not final, yet nothing runs, nothing is pending for the running workers and no timer ` +
            `is set: does it wait for a handler no worker has? Last state: ${JSON.stringify(state)}`);
        }
        if (Date.now() > deadline) throw new Error(`${what} is not final after ${timeoutMs} ms: ${JSON.stringify(state)}`);
        await this.client.advanceClock({ to_next_timer: true });
      }
    } finally {
      await worker.stop();
    }
  }

  /** Stops the workers and the server and removes its database. */
  async close(): Promise<void> {
    await Promise.all([...this.running].map((w) => w.stop()));
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await this.exited;
    clearTimeout(timer);
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Why skipping time now would lose work, or undefined. */
  private async busy(): Promise<string | undefined> {
    for (const w of this.running) if (w.stats().in_flight > 0) return `worker ${w.workerId} holds a task`;
    const { tasks } = await this.client.listTasks({ status: ["running", "pending"], limit: 100 });
    for (const task of tasks) {
      if (task.status === "running") return `task ${task.id} (${task.handler_name}) is running`;
      for (const w of this.running) {
        const c = this.claims.get(w)!;
        if (c.handlers.has(task.handler_name) && c.queues.has(task.queue_name)) return `task ${task.id} (${task.handler_name}) is pending`;
      }
    }
    return undefined;
  }
}

function final<T extends { status: string }>(state: T, statuses: ReadonlySet<string>): [T, boolean] {
  return [state, statuses.has(state.status)];
}

/**
 * `value` split into words as a POSIX shell would (Python's shlex.split): whitespace
 * separates, '...' is literal, "..." and a backslash escape, so ORCH8_SERVER may name a
 * path with spaces in any SDK. An unclosed quote is an error naming the value.
 */
export function shellWords(value: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else if (c === "\\" && i + 1 < value.length && '"\\$`'.includes(value[i + 1])) word += value[++i];
      else word += c;
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word ??= "";
      if (c === "'" || c === '"') quote = c;
      else if (c === "\\" && i + 1 < value.length) word += value[++i];
      else word += c;
    }
  }
  if (quote !== null) throw new Error(`ORCH8_SERVER=${JSON.stringify(value)}: unclosed ${quote}`);
  if (word !== null) words.push(word);
  return words;
}

/** The server's command: ORCH8_SERVER, else orch8-server on PATH; a clear error otherwise. */
function serverCommand(): string[] {
  const given = process.env.ORCH8_SERVER?.trim();
  if (given) return shellWords(given);
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
