// "@orch8/sdk/testing": unit-test a handler without a server (docs/protocol.md 14c,
// P-KIT-1..6), and test workflows on a throwaway server with the test clock (server.ts,
// section 17). The handler gets a real TaskContext; the Outcome is what the worker would
// report, worked out by the worker's own code (classification, strict JSON, P-SDK-27
// bounds, the shutdown message), never a copy of its rules.
import { format } from "node:util";
import { errorFromResponse, LeaseLostError, TaskCancelledError } from "../errors.js";
import type { ClaimedTask, TaskFailureReport, TaskHeartbeat, TaskLeaseStatus } from "../types.js";
import { boundReport } from "../worker/bound.js";
import { TaskContext } from "../worker/context.js";
import { shutdownMessage } from "../worker/drain.js";
import { ShutdownError, Yield } from "../worker/errors.js";
import type { Handler } from "../worker/executor.js";
import { checkOutput, InvalidOutputError } from "../worker/output.js";
import { failureReport, invalidOutputReport, outputRejectedReport, yieldRelease } from "../worker/report.js";
import type { Logger } from "../worker/stats.js";
import { TaskRun } from "../worker/task-run.js";

export { startTestServer, TestServer, type Clock, type RunOptions, type RunTarget, type TestServerOptions, type TestWorkerOptions } from "./server.js";

/** The server's default body limit (section 13). */
export const MAX_BODY_BYTES = 1_048_576;
/** P-ERR-5 allows 128 levels; a completion batch's body, `items` and the item take three. */
export const MAX_OUTPUT_DEPTH = 125;
const LEASE_ID = "test-lease-1";

export interface TestTaskOptions {
  params?: Record<string, unknown>;
  context?: Record<string, unknown>;
  headers?: Record<string, string>;
  /** Default 1. */
  attempt?: number;
  /** Default 3. */
  maxAttempts?: number;
  /** Saved by an earlier attempt; default null. */
  checkpoint?: Record<string, unknown> | null;
  /** Default `test-task-1`. */
  taskId?: string;
  /** Default `test-handler`. */
  handlerName?: string;
  /** Default `default`. */
  queueName?: string;
  /** Named in the shutdown message; default `test-worker`. */
  workerId?: string;
  /** Default 60000, the server's. */
  leaseMs?: number;
  /** Named in the shutdown message; default 25000, the worker's. */
  gracePeriodMs?: number;
  /** Default 1 MiB, the server's. */
  maxBodyBytes?: number;
  /** Called with each heartbeat before it is answered; may fire a trigger. */
  onHeartbeat?: (heartbeat: Heartbeat) => void;
}

/** One heartbeat the handler sent (P-KIT-3); null where it gave none. */
export interface Heartbeat {
  progress: unknown;
  checkpoint: Record<string, unknown> | null;
}

/** One line written through `TestTask.logger`. */
export interface LogLine {
  level: "debug" | "info" | "warning" | "error";
  message: string;
}

/** What the worker would report for the attempt (P-KIT-5); null where it reports nothing. */
export interface Outcome {
  status: "completed" | "failed" | "released" | "cancelled" | "lease_lost";
  output: unknown;
  error: string | null;
  code: string | null;
  retryable: boolean | null;
  retryAfterMs: number | null;
  details: Record<string, unknown> | null;
  checkpoint: Record<string, unknown> | null;
  /** `released`: the yield's delay (P-SDK-32). */
  delayMs: number | null;
}

const NOTHING = { output: null, error: null, code: null, retryable: null, retryAfterMs: null, details: null, checkpoint: null, delayMs: null };

/** A claimed attempt for a unit test: the handler's inputs, records and triggers. */
export class TestTask {
  /** Heartbeats the server would have accepted, in order. */
  readonly heartbeats: Heartbeat[] = [];
  /** Lines written through `logger`. */
  readonly logs: LogLine[] = [];
  /** A logger of the worker's `Logger` shape whose lines land in `logs`. */
  readonly logger: Logger;
  /** The context the handler receives. */
  readonly ctx: TaskContext;
  private readonly run_: TaskRun;
  private readonly opts: Required<Omit<TestTaskOptions, "onHeartbeat" | "checkpoint">> & Pick<TestTaskOptions, "onHeartbeat">;
  private ran = false;

  constructor(options: TestTaskOptions = {}) {
    this.opts = {
      params: {}, context: {}, headers: {}, attempt: 1, maxAttempts: 3, taskId: "test-task-1",
      handlerName: "test-handler", queueName: "default", workerId: "test-worker", leaseMs: 60_000,
      gracePeriodMs: 25_000, maxBodyBytes: MAX_BODY_BYTES, ...definedOnly(options),
    };
    const o = this.opts;
    const now = new Date().toISOString();
    const task: ClaimedTask = {
      id: o.taskId, handler_name: o.handlerName, queue_name: o.queueName, params: asJson(o.params),
      context: asJson(o.context), headers: o.headers, priority: 0, attempt: o.attempt, max_attempts: o.maxAttempts,
      lease: { id: LEASE_ID, worker_id: o.workerId, attempt: o.attempt, expires_at: after(o.leaseMs) },
      checkpoint: asJson(options.checkpoint ?? null), good_until: null, created_at: now, ready_at: now,
      metadata: { attempt: o.attempt, max_attempts: o.maxAttempts, created_at: now },
    };
    this.run_ = new TaskRun(task);
    const server = { heartbeatTask: (id: string, body: TaskHeartbeat) => this.answer(id, body) };
    this.ctx = new TaskContext(this.run_, server, o.workerId, (run, by, error) => run.settle(by, error));
    const line = (level: LogLine["level"]) => (message: string, ...args: unknown[]) => {
      this.logs.push({ level, message: format(message, ...args) });
    };
    this.logger = { debug: line("debug"), info: line("info"), warn: line("warning"), error: line("error") };
  }

  /** The checkpoints saved so far; the last is what the next attempt gets (P-CKPT-1). */
  get checkpoints(): Record<string, unknown>[] {
    return this.heartbeats.flatMap((hb) => (hb.checkpoint === null ? [] : [hb.checkpoint]));
  }

  /** An operator cancelled the task (P-SDK-5). */
  cancel(): void {
    this.run_.settle("cancelled", new TaskCancelledError(`task ${this.opts.taskId} was cancelled`, { status: 409, code: "task_cancelled" }));
  }

  /** The lease was lost (P-SDK-5). */
  loseLease(): void {
    this.run_.settle("lease_lost", new LeaseLostError(`lease ${LEASE_ID} is no longer current`, { status: 409, code: "lease_lost" }));
  }

  /** The worker's grace period ran out now (P-SDK-7). */
  shutdown(): void {
    this.run_.settle("shutdown", new ShutdownError(this.shutdownMessage()));
  }

  /** Runs `handler` once and resolves to what the worker would report. */
  async run(handler: Handler): Promise<Outcome> {
    if (this.ran) throw new Error("a TestTask runs one handler once; build another");
    this.ran = true;
    this.run_.extendLease(after(this.opts.leaseMs));
    let ok = false;
    let value: unknown;
    try {
      value = await handler(this.ctx);
      ok = true;
    } catch (error) {
      value = error;
    }
    return this.outcome(ok, value);
  }

  private outcome(ok: boolean, value: unknown): Outcome {
    const by = this.run_.settledBy;
    if (by === "shutdown") {
      return failed({ lease_id: LEASE_ID, error: this.shutdownMessage(), retryable: true, code: "shutdown" });
    }
    if (by !== undefined) return { status: by, ...NOTHING }; // P-SDK-5: nothing is reported
    if (!ok && value instanceof Yield) {
      const release = yieldRelease(value, LEASE_ID); // P-SDK-32
      return { ...NOTHING, status: "released", checkpoint: release.checkpoint ?? null, delayMs: release.delay_ms ?? 0 };
    }
    if (!ok) return failed(failureReport(value, LEASE_ID));
    try {
      checkOutput(value);
    } catch (err) {
      if (!(err instanceof InvalidOutputError)) throw err;
      return failed(invalidOutputReport(err, LEASE_ID));
    }
    const text = JSON.stringify(value) ?? "null"; // undefined is sent as no output: null
    const stored: unknown = JSON.parse(text);
    const refusal = refusalOf(text, stored, this.opts.maxBodyBytes);
    if (refusal !== undefined) return failed(outputRejectedReport(refusal, LEASE_ID));
    return { ...NOTHING, status: "completed", output: stored };
  }

  private answer(id: string, body: TaskHeartbeat): Promise<TaskLeaseStatus> {
    const beat: Heartbeat = { progress: asJson(body.progress ?? null), checkpoint: asJson(body.checkpoint ?? null) };
    this.opts.onHeartbeat?.(beat);
    const by = this.run_.settledBy;
    if (by === "cancelled") return Promise.reject(new TaskCancelledError(`task ${id} was cancelled`, { status: 409, code: "task_cancelled" }));
    if (by !== undefined) return Promise.reject(new LeaseLostError(`lease ${LEASE_ID} is no longer current`, { status: 409, code: "lease_lost" }));
    this.heartbeats.push(beat);
    const status = { task_id: id, lease_id: LEASE_ID, lease_expires_at: after(body.lease_ms ?? this.opts.leaseMs), cancel_requested: false };
    return Promise.resolve(status);
  }

  private shutdownMessage(): string {
    return shutdownMessage(this.opts.workerId, this.opts.gracePeriodMs, undefined); // P-SDK-29
  }
}

function failed(report: TaskFailureReport): Outcome {
  const r = boundReport(report); // P-SDK-27
  return {
    status: "failed", output: null, error: r.error, code: r.code ?? null, retryable: r.retryable ?? null,
    retryAfterMs: r.retry_after_ms ?? null, details: r.details ?? null, checkpoint: r.checkpoint ?? null, delayMs: null,
  };
}

/** `value` as it reaches the handler or is stored: through JSON (a Date becomes its string). */
function asJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function after(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}

const TITLES: Record<string, string> = {
  payload_too_large: "Payload too large", payload_too_deep: "Payload too deep", unsupported_value: "Unsupported value",
};

/** How the server would refuse a completion carrying this output alone (P-ERR-5, P-KIT-5). */
function refusalOf(text: string, stored: unknown, maxBodyBytes: number) {
  const bytes = Buffer.byteLength(text, "utf8");
  const refuse = (status: number, code: string, detail: string) =>
    errorFromResponse(status, { type: "about:blank", title: TITLES[code], status, code, detail });
  if (bytes > maxBodyBytes) return refuse(413, "payload_too_large", `output of ${bytes} bytes is over the body limit of ${maxBodyBytes}`);
  let deepest = 0;
  let nul = false;
  const stack: Array<[unknown, number]> = [[stored, 1]];
  while (stack.length > 0) {
    const [item, level] = stack.pop()!;
    if (typeof item === "string") nul ||= item.includes("\u0000");
    if (typeof item !== "object" || item === null) continue;
    deepest = Math.max(deepest, level);
    for (const [key, child] of Object.entries(item)) {
      nul ||= key.includes("\u0000");
      stack.push([child, level + 1]);
    }
  }
  if (deepest > MAX_OUTPUT_DEPTH) return refuse(400, "payload_too_deep", `output nested deeper than ${MAX_OUTPUT_DEPTH} levels`);
  if (nul) return refuse(400, "unsupported_value", "output holds a NUL character");
  return undefined;
}
