// The worker heartbeat loop (P-SDK-4, P-WORKER-2, P-WORKER-3): one call per interval lists
// every held task, extends their leases, and brings back the directive and per-task news.
// It runs on its own timer, never behind a poll or a handler's await.
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

export class HeartbeatLoop {
  private readonly stopCtl = new AbortController();
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

  private async runLoop(): Promise<void> {
    let spent = 0;
    while (!this.stopCtl.signal.aborted) {
      // Fixed rate: a slow answer shortens the next wait instead of stretching the period.
      await sleep(Math.max(0, this.intervalMs - spent), this.stopCtl.signal);
      if (this.stopCtl.signal.aborted) return;
      const started = Date.now();
      await this.beat();
      spent = Date.now() - started;
    }
  }

  /** One worker heartbeat; errors are reported, never thrown (the next beat tries again). */
  async beat(): Promise<void> {
    const held = new Map<string, TaskRun>();
    for (const run of this.d.runs()) if (!run.settled) held.set(run.task.id, run);
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
