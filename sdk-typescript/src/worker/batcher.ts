// Group commit of completions (P-SDK-12): with no batch request in flight, the results ready
// in one event-loop turn go out together at its end; results ready while one is in flight
// wait for it and then go together (at most 100 per request). No timer, so a lone result
// goes out without delay and an idle worker adds no latency.
import type { Orch8Client } from "../client.js";
import { Backoff, sleep } from "../backoff.js";
import { errorFromResponse, Orch8Error } from "../errors.js";
import { isOutage, outageWait } from "../outage.js";
import type { BatchItemOutcome, TaskCompletionItem } from "../types.js";
import type { components } from "../generated/schema.js";

type ItemProblem = components["schemas"]["ItemProblem"];
import type { TaskRun } from "./task-run.js";

export const MAX_BATCH_ITEMS = 100; // TaskCompletionBatch maxItems
export const OUTAGE_INITIAL_MS = 500; // P-SDK-9
export const OUTAGE_MAX_MS = 30_000;

/** What became of one submitted completion. */
export type Delivery =
  | { kind: "sent" } // the server answered the item (completed)
  | { kind: "lost"; by: "lease_lost" | "cancelled"; error: Orch8Error } // 409 lease_lost / task_cancelled
  | { kind: "given_up"; error: unknown } // outage outlived the lease deadline, or delivery was stopped
  | { kind: "unsent" } // the lease was lost or cancelled before the item went out
  | { kind: "refused"; error: Orch8Error }; // refused on its own: no re-send can fix it (P-SDK-15)

/**
 * A failure: logged with `line` (P-SDK-31), told to onError when `request` (a failed request;
 * an outage of one item inside a 200 answer is only logged).
 */
export type BatchFailure = (err: unknown, line: BatchLine | undefined, request: boolean) => void;
export interface BatchLine { subject: string; then: string; retryInMs?: number }

interface Pending {
  run: TaskRun;
  item: TaskCompletionItem;
  resolve: (d: Delivery) => void;
}

/** P-SDK-15, P-SDK-27: a 4xx other than 408, 409 and 429 refuses the request's content. */
export function refusesContent(err: unknown): err is Orch8Error {
  return err instanceof Orch8Error && err.status >= 400 && err.status < 500 && err.status !== 409 && !isOutage(err);
}

/** Where a per-item problem has no usable status: its code's own (P-BATCH-1). */
const ITEM_STATUS: Record<string, number> = { lease_lost: 409, task_cancelled: 409, invalid_state: 409, not_found: 404 };

/**
 * The typed error of one `error` item of a 200 batch answer. P-SDK-22: it carries the
 * item's own status (409 for lease_lost), never the batch's 200.
 */
export function itemError(problem: ItemProblem | null | undefined): Orch8Error {
  const p = problem ?? { code: "internal", status: 500, detail: "item not applied" };
  const status = Number.isInteger(p.status) && p.status >= 400 && p.status <= 599 ? p.status : ITEM_STATUS[p.code] ?? 500;
  return errorFromResponse(status, { type: `urn:orch8:problem:${p.code}`, title: p.code, ...p, status, errors: [] });
}

export class CompletionBatcher {
  private queue: Pending[] = [];
  private inFlight = false;
  private gathering = false;
  private readonly backoff = new Backoff(OUTAGE_INITIAL_MS, OUTAGE_MAX_MS);

  constructor(private readonly client: Orch8Client, private readonly onError: BatchFailure) {}

  /** Queues `run`'s output; resolves once the server answered for it or it was given up. */
  submit(run: TaskRun, output: unknown): Promise<Delivery> {
    return new Promise((resolve) => {
      const item: TaskCompletionItem = { task_id: run.task.id, lease_id: run.leaseId, output };
      this.queue.push({ run, item, resolve });
      this.gather();
    });
  }

  /**
   * P-SDK-12: with no request in flight, the send waits for the end of the current event-loop
   * turn (setImmediate, not a timer), so results that become ready in the same turn go together.
   */
  private gather(): void {
    if (this.inFlight || this.gathering) return;
    this.gathering = true;
    setImmediate(() => {
      this.gathering = false;
      this.pump();
    });
  }

  /** Starts the next request unless one is in flight (or backing off) or nothing waits. */
  private pump(): void {
    if (this.inFlight) return;
    const batch = this.queue.splice(0, MAX_BATCH_ITEMS);
    if (batch.length === 0) return;
    this.inFlight = true;
    void this.send(batch).finally(() => {
      this.inFlight = false;
      this.pump();
    });
  }

  private async send(all: Pending[]): Promise<void> {
    // A run settled meanwhile (lease lost, cancelled) sends nothing (P-SDK-5).
    const batch = all.filter((p) => {
      if (p.run.settled) p.resolve({ kind: "unsent" });
      return !p.run.settled;
    });
    if (batch.length === 0) return;
    let items: BatchItemOutcome[];
    try {
      items = (await this.client.completeTasks(batch.map((p) => p.item))).items;
    } catch (err) {
      if (isOutage(err)) return this.retry(batch, err, true);
      if (refusesContent(err) && batch.length > 1) {
        // P-SDK-15: refused as a whole (e.g. 413 for the sum of outputs): halves, until alone.
        this.onError(err, { subject: `completion batch of ${batch.length}`, then: "splitting it" }, true);
        const mid = Math.ceil(batch.length / 2);
        await this.send(batch.slice(0, mid));
        await this.send(batch.slice(mid));
        return;
      }
      this.onError(err, undefined, true); // an item refused alone is logged as its task's output_rejected
      for (const p of batch) {
        if (err instanceof Orch8Error) p.resolve({ kind: "refused", error: err });
        else p.resolve({ kind: "given_up", error: err });
      }
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
      const err = itemError(outcome.problem);
      if (err.code === "lease_lost") p.resolve({ kind: "lost", by: "lease_lost", error: err });
      else if (err.code === "task_cancelled") p.resolve({ kind: "lost", by: "cancelled", error: err });
      else if (isOutage(err)) {
        outage = err;
        again.push(p);
      } else p.resolve({ kind: "refused", error: err });
    });
    if (again.length > 0) await this.retry(again, outage, false);
  }

  /**
   * P-SDK-9: items whose lease deadline passed (or whose delivery was stopped) are given up;
   * the rest go back to the front of the queue after the outage backoff (or Retry-After,
   * P-SDK-16). Results that become ready meanwhile wait too, and join them in the next request.
   */
  private async retry(batch: Pending[], err: unknown, requestFailed: boolean): Promise<void> {
    const now = Date.now();
    const keep: Pending[] = [];
    let left = Infinity;
    for (const p of batch) {
      const remaining = Date.parse(p.run.leaseExpiresAt) - now;
      if (remaining <= 0 || p.run.stopDelivery.aborted) p.resolve({ kind: "given_up", error: err });
      else {
        keep.push(p);
        left = Math.min(left, remaining);
      }
    }
    const delay = Math.min(outageWait(err, this.backoff.next()), left);
    // onError hears of failed requests only; an item's outage inside an answer is logged too.
    const line = keep.length === 0 ? undefined : { subject: `completion batch of ${keep.length}`, then: `retrying in ${delay} ms`, retryInMs: delay };
    this.onError(err, line, requestFailed);
    if (keep.length === 0) return;
    await sleep(delay, keep.map((p) => p.run.stopDelivery.signal));
    this.queue.unshift(...keep);
  }
}
