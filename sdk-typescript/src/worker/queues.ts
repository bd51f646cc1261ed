// Which queues a Worker claims from (P-SDK-23): one queue (`queueName`, seed 000's and the
// default), or an ordered list (`queueNames`, strict order P-QUEUE-2) with optional weights
// (`queueWeights`, P-QUEUE-3). Checked once when the worker is built, before any request,
// so a worker never sends a poll the server refuses with 422 (P-QUEUE-4).

/** PollOptions.queue_names maxItems. */
export const MAX_QUEUE_NAMES = 10;
/** Bounds of one PollOptions.queue_weights value. */
export const MIN_QUEUE_WEIGHT = 1;
export const MAX_QUEUE_WEIGHT = 1000;

/** What every poll carries: either `queue_name` (or nothing), or `queue_names` (+ weights). */
export type QueueSelection =
  | { kind: "single"; queueName: string | undefined }
  | { kind: "list"; queueNames: readonly string[]; queueWeights: Readonly<Record<string, number>> | undefined };

export interface QueueOptions {
  queueName?: string | undefined;
  queueNames?: readonly string[] | undefined;
  queueWeights?: Readonly<Record<string, number>> | undefined;
}

const show = (v: unknown) => JSON.stringify(v) ?? String(v);

/**
 * P-SDK-23: validates the worker's queue options; throws TypeError naming the option.
 * Returns frozen copies, so a caller mutating its array or object later changes nothing.
 */
export function selectQueues(o: QueueOptions): QueueSelection {
  const { queueName, queueNames, queueWeights } = o;
  if (queueNames === undefined) {
    if (queueWeights !== undefined) throw new TypeError("queueWeights needs queueNames: weights apply to a list of queues (P-SDK-23)");
    return { kind: "single", queueName };
  }
  if (queueName !== undefined) {
    throw new TypeError("queueName and queueNames are exclusive: pass one queue as queueName, or the list as queueNames (P-SDK-23)");
  }
  if (!Array.isArray(queueNames)) throw new TypeError(`queueNames must be an array of queue names, got ${show(queueNames)}`);
  if (queueNames.length === 0) throw new TypeError("queueNames is empty: list 1 to 10 queue names, or omit it for the default queue");
  if (queueNames.length > MAX_QUEUE_NAMES) {
    throw new TypeError(`queueNames lists ${queueNames.length} queues; at most ${MAX_QUEUE_NAMES} (P-QUEUE-2)`);
  }
  const seen = new Set<string>();
  for (const name of queueNames) {
    if (typeof name !== "string" || name === "") throw new TypeError(`queueNames entries must be non-empty strings, got ${show(name)}`);
    if (seen.has(name)) throw new TypeError(`queueNames repeats the queue "${name}"; each queue may appear once`);
    seen.add(name);
  }
  const names = Object.freeze([...queueNames]);
  if (queueWeights === undefined) return { kind: "list", queueNames: names, queueWeights: undefined };
  if (typeof queueWeights !== "object" || queueWeights === null || Array.isArray(queueWeights)) {
    throw new TypeError(`queueWeights must be an object mapping queue name to weight, got ${show(queueWeights)}`);
  }
  const weighted = Object.keys(queueWeights);
  const extra = weighted.filter((k) => !seen.has(k));
  const missing = names.filter((n) => !Object.hasOwn(queueWeights, n));
  if (extra.length > 0 || missing.length > 0) {
    const parts = [
      ...(missing.length > 0 ? [`no weight for ${missing.map(show).join(", ")}`] : []),
      ...(extra.length > 0 ? [`weights for queues not in queueNames: ${extra.map(show).join(", ")}`] : []),
    ];
    throw new TypeError(`queueWeights must name exactly the queues of queueNames (${parts.join("; ")}) (P-QUEUE-3)`);
  }
  for (const name of names) {
    const w = queueWeights[name];
    if (!Number.isInteger(w) || w! < MIN_QUEUE_WEIGHT || w! > MAX_QUEUE_WEIGHT) {
      throw new TypeError(`queueWeights["${name}"] is ${show(w)}; a weight is an integer from ${MIN_QUEUE_WEIGHT} to ${MAX_QUEUE_WEIGHT}`);
    }
  }
  // Same key order as the list, so the wire body reads like the options.
  const weights = Object.freeze(Object.fromEntries(names.map((n) => [n, queueWeights[n]!])));
  return { kind: "list", queueNames: names, queueWeights: weights };
}

/** P-SDK-21, P-SDK-23: registration's `queues`: the list, else `[queueName ?? "default"]`. */
export function registeredQueues(s: QueueSelection): string[] {
  return s.kind === "list" ? [...s.queueNames] : [s.queueName ?? "default"];
}
