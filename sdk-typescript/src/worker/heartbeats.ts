// The worker heartbeat loop (P-SDK-4, P-WORKER-2, P-WORKER-3): one call per interval lists
// every held task, extends their leases, and brings back the directive and per-task news.
// It runs on its own timer, never behind a poll or a handler's await. P-SDK-30: the timer
// fits the shortest lease held, a third of it, so a lease under three of the server's
// intervals is kept; a worker's own heartbeatIntervalMs is kept as given.
import type { Orch8Client } from "../client.js";
import { LeaseLostError, TaskCancelledError } from "../errors.js";
import { sleep } from "../backoff.js";
import type { WorkerDirective, WorkerHeartbeat } from "../types.js";
import type { TaskRun } from "./task-run.js";

export interface HeartbeatDeps {
  client: Orch8Client;
  workerId: string;
  /** Tasks held now; lost ones are left out, they are not ours any more. */
  runs(): Iterable<TaskRun>;
  state(): NonNullable<WorkerHeartbeat["state"]>;
  leaseMs: number | undefined;
  lose(run: TaskRun, by: "lease_lost" | "cancelled", error: Error): void;
  directive(d: WorkerDirective): void;
  error(err: unknown): void;
  /** A heartbeat was answered (true) or failed (false); not called when stop aborts one. */
  answered(ok: boolean): void;
}

/** P-SDK-30: the lease-fitted period never goes under this. */
export const MIN_HEARTBEAT_MS = 100;

/**
 * P-SDK-30: the period for the tasks held now: min(interval, L / 3), where L is the shortest
 * lease among them (as claimed), never under 100 ms on account of a lease; `intervalMs`
 * alone when nothing with a known lease is held.
 */
export function heartbeatPeriod(intervalMs: number, held: Iterable<{ leaseMs: number | undefined }>): number {
  let shortest = Infinity;
  for (const run of held) if (run.leaseMs !== undefined && run.leaseMs < shortest) shortest = run.leaseMs;
  if (shortest === Infinity) return intervalMs;
  return Math.min(intervalMs, Math.max(MIN_HEARTBEAT_MS, shortest / 3));
}

export class HeartbeatLoop {
  private readonly stopCtl = new AbortController();
  /** Fired by wake(): the loop's sleep ends and its next beat is recomputed (P-SDK-30). */
  private wakeCtl = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(private readonly d: HeartbeatDeps, public intervalMs: number, private readonly fixedInterval: boolean) {}

  start(): void {
    this.loop ??= this.runLoop();
  }

  /** Stops the loop, aborting a heartbeat in flight (shutdown stays bounded, P-SDK-17). */
  async stop(): Promise<void> {
    this.stopCtl.abort();
    await this.loop;
  }

  /**
   * P-SDK-30: a task was claimed; the loop recomputes its next beat now rather than after the
   * interval it is sleeping, so the task's first heartbeat comes within a third of its lease.
   */
  wake(): void {
    this.wakeCtl.abort();
  }

  /** Held tasks: the ones a beat lists. */
  private *held(): Iterable<TaskRun> {
    for (const run of this.d.runs()) if (!run.settled) yield run;
  }

  private async runLoop(): Promise<void> {
    let last = Date.now(); // registration counts as the first beat
    while (!this.stopCtl.signal.aborted) {
      if (this.wakeCtl.signal.aborted) this.wakeCtl = new AbortController();
      // Fixed rate from the last beat's start: a slow answer shortens the next wait instead
      // of stretching the period. P-SDK-30: the period is that of the tasks held now, so it
      // shortens when a short lease is claimed and goes back to the interval when it ends.
      // An explicit heartbeatIntervalMs is kept as given (it can turn heartbeats off).
      const due = () => last + (this.fixedInterval ? this.intervalMs : heartbeatPeriod(this.intervalMs, this.held()));
      // Always one timer tick at least: a beat failing at once must not starve timers.
      await sleep(Math.max(0, due() - Date.now()), [this.stopCtl.signal, this.wakeCtl.signal]);
      if (this.stopCtl.signal.aborted) return;
      if (Date.now() < due()) continue; // woken, or the tasks held changed: wait for the new due time
      last = Date.now();
      await this.beat();
    }
  }

  /** One worker heartbeat; errors are reported, never thrown (the next beat tries again). */
  async beat(): Promise<void> {
    const held = new Map<string, TaskRun>();
    for (const run of this.held()) held.set(run.task.id, run);
    const body: WorkerHeartbeat = { state: this.d.state(), active_task_ids: [...held.keys()] };
    if (this.d.leaseMs !== undefined) body.lease_ms = this.d.leaseMs;
    try {
      // The client's own timeout, as in the other SDKs: a short one made busy servers look
      // down and let leases lapse while the answer was on its way.
      const answer = await this.d.client.heartbeatWorker(this.d.workerId, body, { signal: this.stopCtl.signal });
      this.d.answered(true);
      if (!this.fixedInterval && answer.heartbeat_interval_ms > 0) this.intervalMs = answer.heartbeat_interval_ms;
      for (const status of answer.tasks) {
        const run = held.get(status.task_id);
        if (!run) continue;
        if (run.phase !== "running" && (status.lease_lost || status.cancel_requested)) {
          // The result is on its way or already answered: our own completion may be what
          // ended the lease, so the server's answer to the result decides (as sdk-go does).
          continue;
        }
        // P-SDK-22: learnt from a 200 answer, so no HTTP status (0), never "HTTP 200 lease_lost".
        if (status.lease_lost) {
          this.d.lose(run, "lease_lost", new LeaseLostError(`the worker heartbeat says the lease of task ${run.task.id} is lost`, { status: 0, code: "lease_lost" }));
        } else if (status.cancel_requested) {
          this.d.lose(run, "cancelled", new TaskCancelledError(`the worker heartbeat says task ${run.task.id} was cancelled`, { status: 0, code: "task_cancelled" }));
        } else {
          run.extendLease(status.lease_expires_at);
        }
      }
      this.d.directive(answer.directive);
    } catch (err) {
      if (this.stopCtl.signal.aborted) return;
      this.d.answered(false);
      this.d.error(err);
    }
  }
}
