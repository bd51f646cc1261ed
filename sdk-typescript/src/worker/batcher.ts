// Group commit of completions (P-SDK-12): a result ready while no batch request is in flight
// goes out at once, alone; results ready while one is in flight wait for it and then go
// together (at most 100 per request). No timer, so an idle worker adds no latency.
import type { Orch8Client } from "../client.js";
import { Backoff, sleep } from "../backoff.js";
import { errorFromResponse, Orch8Error, RateLimitedError, UnavailableError, ValidationError } from "../errors.js";
import type { BatchItemOutcome, TaskCompletionItem } from "../types.js";
import type { TaskRun } from "./task-run.js";

export const MAX_BATCH_ITEMS = 100; // TaskCompletionBatch maxItems
export const OUTAGE_INITIAL_MS = 500; // P-SDK-9
export const OUTAGE_MAX_MS = 30_000;

/** Worth re-sending later: the server (or the path to it) is down, not the request wrong. */
export function isOutage(err: unknown): boolean {
  return err instanceof UnavailableError || err instanceof RateLimitedError || (err instanceof Orch8Error && err.status >= 500);
}

/** What became of one submitted completion. */
export type Delivery =
  | { kind: "sent" } // the server answered the item (completed)
  | { kind: "lost"; by: "lease_lost" | "cancelled"; error: Orch8Error } // 409 lease_lost / task_cancelled
  | { kind: "given_up"; error: unknown } // outage outlived the lease deadline, or delivery was stopped
  | { kind: "unsent" } // the lease was lost or cancelled before the item went out
  | { kind: "refused"; error: unknown }; // a refusal no re-send can fix

interface Pending {
  run: TaskRun;
  item: TaskCompletionItem;
  resolve: (d: Delivery) => void;
  /** Send alone: a multi-item request was refused as a whole (e.g. 413 for the sum of outputs). */
  solo: boolean;
}

export class CompletionBatcher {
  private queue: Pending[] = [];
  private inFlight = false;
  private readonly backoff = new Backoff(OUTAGE_INITIAL_MS, OUTAGE_MAX_MS);

  constructor(private readonly client: Orch8Client) {}

  /** Queues `run`'s output; resolves once the server answered for it or it was given up. */
  submit(run: TaskRun, output: unknown): Promise<Delivery> {
    return new Promise((resolve) => {
      const item: TaskCompletionItem = { task_id: run.task.id, lease_id: run.leaseId, output };
      this.queue.push({ run, item, resolve, solo: false });
      this.pump();
    });
  }

  /** Starts the next request unless one is in flight (or backing off) or nothing waits. */
  private pump(): void {
    if (this.inFlight) return;
    const batch = this.take();
    if (batch.length === 0) return;
    this.inFlight = true;
    void this.send(batch).finally(() => {
      this.inFlight = false;
      this.pump();
    });
  }

  /** The next request's items, oldest first. A run settled meanwhile sends nothing (P-SDK-5). */
  private take(): Pending[] {
    const batch: Pending[] = [];
    while (this.queue.length > 0 && batch.length < MAX_BATCH_ITEMS) {
      const p = this.queue[0]!;
      if (p.run.settled) {
        this.queue.shift();
        p.resolve({ kind: "unsent" });
        continue;
      }
      if (p.solo && batch.length > 0) break;
      this.queue.shift();
      batch.push(p);
      if (p.solo) break;
    }
    return batch;
  }

  private async send(batch: Pending[]): Promise<void> {
    let items: BatchItemOutcome[];
    try {
      items = (await this.client.completeTasks(batch.map((p) => p.item))).items;
    } catch (err) {
      await this.failed(batch, err);
      return;
    }
    this.backoff.reset(); // P-SDK-9: the first success resets the outage backoff
    const again: Pending[] = [];
    let outage: unknown;
    batch.forEach((p, i) => {
      const outcome = items[i];
      if (!outcome || outcome.status !== "error") {
        p.resolve({ kind: "sent" });
        return;
      }
      const problem = outcome.problem ?? { code: "internal", status: 500, detail: "item not applied" };
      const err = errorFromResponse(problem.status, { type: `urn:orch8:problem:${problem.code}`, title: problem.code, ...problem, errors: [] });
      if (problem.code === "lease_lost") p.resolve({ kind: "lost", by: "lease_lost", error: err });
      else if (problem.code === "task_cancelled") p.resolve({ kind: "lost", by: "cancelled", error: err });
      else if (isOutage(err)) {
        outage = err;
        again.push(p);
      } else p.resolve({ kind: "refused", error: err });
    });
    if (again.length > 0) await this.retry(again, outage);
  }

  /** The whole request failed: re-send through outages, split a refused batch, else refuse. */
  private async failed(batch: Pending[], err: unknown): Promise<void> {
    if (isOutage(err)) {
      await this.retry(batch, err);
      return;
    }
    if (err instanceof ValidationError && batch.length > 1) {
      // Refused as a whole (the outputs together over the body limit): each item alone decides.
      for (const p of batch) p.solo = true;
      this.queue.unshift(...batch);
      return;
    }
    for (const p of batch) p.resolve({ kind: "refused", error: err });
  }

  /**
   * P-SDK-9: items whose lease deadline passed (or whose delivery was stopped) are given up;
   * the rest go back to the front of the queue after the outage backoff. Results that become
   * ready meanwhile wait too, and join them in the next request.
   */
  private async retry(batch: Pending[], err: unknown): Promise<void> {
    const now = Date.now();
    const keep: Pending[] = [];
    let left = Infinity;
    for (const p of batch) {
      const remaining = Date.parse(p.run.leaseExpiresAt) - now;
      if (remaining <= 0 || p.run.stopDelivery.signal.aborted) p.resolve({ kind: "given_up", error: err });
      else {
        keep.push(p);
        left = Math.min(left, remaining);
      }
    }
    if (keep.length === 0) return;
    const delay = Math.min(this.backoff.next(), left);
    await sleep(delay, keep.map((p) => p.run.stopDelivery.signal));
    this.queue.unshift(...keep);
  }
}
