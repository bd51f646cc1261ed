// The end of a shutdown (P-SDK-7, P-SDK-17, P-SDK-29): running handlers get the grace
// period, then their signal fires and what is left is failed with `shutdown`, the message
// saying why the handler was still running.
import { sleep } from "../backoff.js";
import type { TaskFailureReport } from "../types.js";
import { ShutdownError } from "./errors.js";
import type { WorkerLog } from "./logs.js";
import type { TaskRun } from "./task-run.js";

/** P-SDK-17: shutdown's own calls (leftover fails, deregister) get this long after the grace period. */
export const SHUTDOWN_CALLS_MS = 4_000;

export interface DrainDeps {
  workerId: string;
  gracePeriodMs: number;
  /** The runs held now. */
  runs(): TaskRun[];
  /** Fires when a second signal ends the grace period at once. */
  cut: AbortSignal;
  /** The signal that cut it, once one did. */
  secondSignal(): string | undefined;
  fail(run: TaskRun, report: TaskFailureReport, stop: AbortSignal): Promise<void>;
  log: WorkerLog;
}

/** P-SDK-29: `worker <id> shut down: ...`, the stored message of every `shutdown` fail. */
export function shutdownMessage(workerId: string, gracePeriodMs: number, secondSignal: string | undefined): string {
  return secondSignal === undefined
    ? `worker ${workerId} shut down: grace period of ${gracePeriodMs} ms ended`
    : `worker ${workerId} shut down: second signal ${secondSignal} ended the grace period`;
}

/** Waits up to the grace period for the runs, then cancels and fails what is left. */
export async function drain(d: DrainDeps): Promise<void> {
  const all = () => Promise.all(d.runs().map((r) => r.done));
  const timer = new AbortController();
  const graceOver = sleep(d.gracePeriodMs, [timer.signal, d.cut]).then(() => "grace" as const);
  const outcome = await Promise.race([all().then(() => "drained" as const), graceOver]);
  timer.abort(); // P-SDK-29: no grace timer outlives run()
  if (outcome === "drained") return;
  // Bounded: a handler that ignores its signal, or a server that does not answer, cannot
  // hold the worker past grace + a few seconds.
  const stop = AbortSignal.timeout(SHUTDOWN_CALLS_MS);
  const why = shutdownMessage(d.workerId, d.gracePeriodMs, d.secondSignal());
  const left = d.runs().filter((run) => run.phase === "running").length;
  if (left > 0) d.log.line("warn", "grace_ended", `${left} task(s) still running, failed with shutdown`, { tasks: left }, why);
  await Promise.all(d.runs().map(async (run) => {
    if (run.phase !== "running") {
      run.stopDelivery.abort(); // a result stuck in an outage: give up re-sending
      // P-SDK-29, P-SDK-11: and wait for the give-up to be counted (and its hook run), so
      // the stats of run()'s `stopped` line are final; bounded like the shutdown's calls.
      const settled = new AbortController();
      void run.done.then(() => settled.abort());
      await sleep(SHUTDOWN_CALLS_MS, [stop, settled.signal]);
      return;
    }
    if (!run.settle("shutdown", new ShutdownError(why))) return;
    await d.fail(run, { lease_id: run.leaseId, error: why, retryable: true, code: "shutdown" }, stop);
  }));
}

