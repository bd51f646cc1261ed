// The SDK's telemetry seam (docs/protocol.md section 15). The core package defines only this
// interface and calls it at fixed points; it never imports OpenTelemetry. The OpenTelemetry
// implementation is `openTelemetry()` from "@orch8/sdk/otel". Without a telemetry object
// every call site is skipped by a single undefined check, so the cost is unchanged.
import type { ClaimedTask, NewTask } from "./types.js";
import type { Outcome } from "./worker/task-run.js";

/** Answer of a send: the ids the server gave the enqueued tasks, in order. */
export type EnqueuedIds = readonly string[];

/**
 * What the client and the worker report. Pass one object as the `telemetry` option of
 * `Orch8Client` and of `Worker`; `openTelemetry()` from "@orch8/sdk/otel" is the stock one.
 */
export interface Telemetry {
  /**
   * P-TEL-1: runs one enqueue (`batch` false) or one enqueue batch in a producer span.
   * `send` gets the tasks to put on the wire, with trace headers added, and resolves to
   * the ids the server assigned.
   */
  enqueue(tasks: readonly NewTask[], batch: boolean, send: (tasks: NewTask[]) => Promise<EnqueuedIds>): Promise<void>;
  /** P-TEL-3, P-TEL-4: the spans and instruments of one worker. */
  worker(info: WorkerIdentity): WorkerTelemetry;
}

/** Who the worker is, for span attributes and the free-slot gauge. */
export interface WorkerIdentity {
  workerId: string;
  concurrency: number;
}

/** The worker's side of telemetry; one per Worker. */
export interface WorkerTelemetry {
  /**
   * A poll answered (`tasks`, maybe none) or failed (`tasks` undefined). `startedAt` is
   * the epoch ms the poll was sent. Returns what `taskStarted` links each task to.
   */
  polled(startedAt: number, tasks: readonly ClaimedTask[] | undefined): PollLink;
  /** A claimed task's handler is about to run (or be refused with no_handler). */
  taskStarted(task: ClaimedTask, claimedAt: number, poll: PollLink): TaskTelemetry;
  /** One worker heartbeat answered (true) or failed (false). */
  heartbeat(ok: boolean): void;
  /** The number of tasks held changed by `delta`; `free` slots are left. */
  held(delta: 1 | -1, free: number): void;
}

/** Opaque: the poll a task came from (the receive span's context, for OpenTelemetry). */
export type PollLink = unknown;

/** One task's run: its process span and its share of the metrics. */
export interface TaskTelemetry {
  /** Calls `fn` (the handler) with the process span current; returns what `fn` returns. */
  run<T>(fn: () => T): T;
  /**
   * The task was counted under `outcome` (P-SDK-11; the span's `orch8.outcome`); `code` is
   * the failure code, `handlerSeconds` the handler's run time, undefined when none ran.
   */
  ended(outcome: Outcome, code: string | undefined, handlerSeconds: number | undefined): void;
}
