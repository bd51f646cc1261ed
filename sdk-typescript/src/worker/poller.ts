// What one poll asks for (P-SDK-3, P-SDK-13): min(free slots, 100) tasks, and at most 50
// handler names, the chunks taken in turn so every handler is polled. The worker never
// sends a poll the server rejects for its size. Its queues ride along unchanged in every
// poll (P-SDK-23).
import type { PollBatchOptions } from "../types.js";
import type { QueueSelection } from "./queues.js";

/** PollBatchOptions.batch_size maximum. */
export const MAX_POLL_BATCH = 100;
/** PollBatchOptions.handler_names maxItems. */
export const MAX_POLL_HANDLERS = 50;

/**
 * P-SDK-26: the free slots a poll waits for while results are being reported: half of
 * min(concurrency, 100), rounded up, by default; `given` is capped to min(concurrency, 100).
 */
export function pollThreshold(concurrency: number, given?: number): number {
  const most = Math.min(concurrency, MAX_POLL_BATCH);
  if (given === undefined) return Math.ceil(most / 2);
  if (!Number.isInteger(given) || given < 1) throw new Error("pollThreshold must be an integer >= 1");
  return Math.min(given, most);
}

/**
 * P-SDK-3: free slots. A completion handed to the batcher frees its slot, so the next poll
 * overlaps with reporting; at most `concurrency` of them do (bounded unsent results).
 */
export function freeSlots(concurrency: number, held: number, handed: number): number {
  return concurrency - held + Math.min(handed, concurrency);
}

/**
 * P-SDK-26: true while the poll should wait for slots that free up once the results being
 * reported are answered; a worker whose held tasks are all in their handlers polls at once.
 */
export function gatherSlots(free: number, threshold: number, held: Iterable<{ phase: string }>): boolean {
  if (free >= threshold) return false;
  for (const run of held) if (run.phase === "delivering") return true;
  return false;
}

export interface PollPlanOptions {
  handlerNames: readonly string[];
  workerId: string;
  waitMs: number;
  queues: QueueSelection;
  leaseMs: number | undefined;
}

/** Builds successive poll bodies, round robin over the handler-name chunks. */
export class PollPlan {
  private readonly chunks: string[][] = [];
  private next = 0;

  constructor(private readonly o: PollPlanOptions) {
    for (let i = 0; i < o.handlerNames.length; i += MAX_POLL_HANDLERS) {
      this.chunks.push(o.handlerNames.slice(i, i + MAX_POLL_HANDLERS));
    }
  }

  /** The body of the next poll for `free` (> 0) free slots. */
  body(free: number): PollBatchOptions {
    const names = this.chunks[this.next]!;
    this.next = (this.next + 1) % this.chunks.length;
    const body: PollBatchOptions = {
      handler_names: names,
      worker_id: this.o.workerId,
      batch_size: Math.min(free, MAX_POLL_BATCH),
      wait_ms: this.o.waitMs,
    };
    const q = this.o.queues;
    if (q.kind === "single") {
      if (q.queueName !== undefined) body.queue_name = q.queueName;
    } else {
      // P-QUEUE-2, P-QUEUE-3: the list (and weights) as given, in every poll.
      body.queue_names = [...q.queueNames];
      if (q.queueWeights !== undefined) body.queue_weights = { ...q.queueWeights };
    }
    if (this.o.leaseMs !== undefined) body.lease_ms = this.o.leaseMs;
    return body;
  }
}
