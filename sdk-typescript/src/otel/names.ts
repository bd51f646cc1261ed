// The names of docs/protocol.md section 15, identical in every SDK: span attributes
// (P-TEL-1, P-TEL-3) and the worker's instruments (P-TEL-4). Change them only with the spec.

/** The instrumentation scope of the tracer and the meter (P-TEL-4: meter `orch8`). */
export const SCOPE = "orch8";

export const ATTR = {
  system: "messaging.system",
  operation: "messaging.operation.type",
  destination: "messaging.destination.name",
  messageId: "messaging.message.id",
  batchCount: "messaging.batch.message_count",
  handler: "orch8.handler",
  attempt: "orch8.attempt",
  workerId: "orch8.worker.id",
  outcome: "orch8.outcome",
  errorType: "error.type",
} as const;

/** `messaging.system` of every span. */
export const SYSTEM = "orch8";

/** P-TEL-4: instrument names, units and kinds. */
export const METRIC = {
  duration: { name: "orch8.worker.task.duration", unit: "s", description: "Handler run time" },
  scheduleToStart: {
    name: "orch8.worker.task.schedule_to_start", unit: "s",
    description: "Claim time minus the time the attempt became claimable (ready_at)",
  },
  completed: { name: "orch8.worker.tasks.completed", unit: "{task}", description: "Completions acknowledged" },
  failed: { name: "orch8.worker.tasks.failed", unit: "{task}", description: "Failures acknowledged, by code" },
  polls: { name: "orch8.worker.polls", unit: "{poll}", description: "Polls answered or failed" },
  heartbeats: { name: "orch8.worker.heartbeats", unit: "{heartbeat}", description: "Worker heartbeats" },
  leaseLosses: { name: "orch8.worker.lease_losses", unit: "{task}", description: "Tasks given up as lease lost" },
  inFlight: { name: "orch8.worker.tasks.in_flight", unit: "{task}", description: "Tasks held now" },
  slotsFree: { name: "orch8.worker.slots.free", unit: "{slot}", description: "Free slots (concurrency - in flight)" },
} as const;

/** Seconds-scale buckets: a handler or a queue wait takes ms to minutes, not the default ms scale. */
export const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** The queue a span or metric names: the task's, else the protocol's `default` (P-QUEUE-1). */
export function queueOf(task: { queue_name?: string | undefined }): string {
  return task.queue_name ?? "default";
}

/**
 * The one queue of a batch, or undefined when its tasks name several (P-TEL-1, P-TEL-3: the
 * span is then named `send` / `receive` alone, without `messaging.destination.name`).
 */
export function queuesOf(tasks: readonly { queue_name?: string | undefined }[]): string | undefined {
  const queues = new Set(tasks.map(queueOf));
  return queues.size === 1 ? [...queues][0] : undefined;
}

/** `<operation> <queue>`, or the operation alone for a batch of several queues (P-TEL-1, P-TEL-3). */
export function spanName(operation: "send" | "receive", queue: string | undefined): string {
  return queue === undefined ? operation : `${operation} ${queue}`;
}
