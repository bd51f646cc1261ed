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
