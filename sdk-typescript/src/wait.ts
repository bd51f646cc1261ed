// P-SDK-25: waitInstance / waitTask. Both long-poll `GET ...?wait_ms=` in rounds of at most
// 30 s until the object is final and return it whatever its final status (a failed
// instance is an answer, not an error). An outage (P-SDK-16) is ridden out with backoff,
// like any safe call (P-SDK-2), until the deadline; any other error is thrown as is.
import { Backoff, sleep } from "./backoff.js";
import { Orch8Error } from "./errors.js";
import * as C from "./generated/constants.js";
import { isOutage, outageWait } from "./outage.js";
import type { Instance, InstanceStatus, Task, TaskStatus } from "./types.js";

/** The longest single `wait_ms` round a waiting helper asks for (P-SDK-25). */
export const WAIT_ROUND_MS = C.WAIT_ROUND_MS;
/** A waiting helper's default timeout: 5 minutes (P-SDK-25). */
export const DEFAULT_WAIT_TIMEOUT_MS = C.DEFAULT_WAIT_TIMEOUT_MS;
/** Instance statuses after which nothing changes by itself (P-WF-10). */
export const FINAL_INSTANCE_STATUSES: ReadonlySet<InstanceStatus> = new Set(["completed", "failed", "cancelled"]);
/** Task statuses after which nothing changes by itself. */
export const FINAL_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set(["completed", "failed", "cancelled", "expired"]);

// Between outage retries of a wait: the client's safe-retry backoff, capped a bit higher
// because a wait has minutes to spend.
const OUTAGE_INITIAL_MS = 200;
const OUTAGE_MAX_MS = 5_000;
// A server whose longest wait is shorter than asked (--max-wait-ms, P-WF-9) answers early;
// a round is never shorter than this, so such a server is not polled in a busy loop.
const MIN_ROUND_MS = 50;

/** Options of `waitInstance` / `waitTask`. */
export interface WaitOptions {
  /** Give up after this many ms with a WaitTimeoutError; default 300000 (5 minutes). */
  timeoutMs?: number;
  /** Aborts the wait; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** The timeout of a waiting helper passed before the object was final (P-SDK-25). */
export class WaitTimeoutError<T = Instance | Task> extends Orch8Error {
  /** The last state seen, or undefined when the server never answered (an outage throughout). */
  readonly lastState: T | undefined;
  /** The timeout that passed, in ms. */
  readonly timeoutMs: number;

  constructor(what: string, timeoutMs: number, last: T | undefined, cause?: unknown) {
    const status = (last as { status?: string } | undefined)?.status;
    super(`${what} not final after ${timeoutMs} ms${status ? ` (last status ${status})` : " (no answer)"}`, {
      status: 0,
      code: "wait_timeout",
      ...(cause === undefined ? {} : { cause }),
    });
    this.lastState = last;
    this.timeoutMs = timeoutMs;
  }
}

/** One round: the object's state after waiting up to `waitMs` for it to be final. */
export type FetchRound<T> = (waitMs: number, signal: AbortSignal | undefined) => Promise<T>;

/**
 * Repeats `fetchRound` until `isFinal` holds of its answer or `options.timeoutMs` passes.
 * `what` names the object in the timeout error's message.
 */
export async function waitUntilFinal<T extends { status: string }>(
  what: string,
  fetchRound: FetchRound<T>,
  isFinal: (status: string) => boolean,
  options: WaitOptions = {},
  now: () => number = Date.now,
): Promise<T> {
  // P-SDK-25: a timeout of 0 or less (or none) means the default, 5 minutes.
  const given = options.timeoutMs;
  if (given !== undefined && Number.isNaN(given)) throw new RangeError("timeoutMs must be a number, got NaN");
  const timeoutMs = given === undefined || given <= 0 ? DEFAULT_WAIT_TIMEOUT_MS : given;
  const begun = now();
  const deadline = begun + timeoutMs;
  const backoff = new Backoff(OUTAGE_INITIAL_MS, OUTAGE_MAX_MS);
  let last: T | undefined;
  let outage: unknown;
  for (let round = 0; ; round++) {
    if (options.signal?.aborted) throw options.signal.reason ?? new DOMException("aborted", "AbortError");
    // The first round asks for the whole timeout (up to a round), even if the clock ticked.
    const started = round === 0 ? begun : now();
    const waitMs = Math.min(WAIT_ROUND_MS, Math.floor(Math.max(0, deadline - started)));
    try {
      last = await fetchRound(waitMs, options.signal);
      outage = undefined;
      backoff.reset();
      if (isFinal(last.status)) return last;
      const early = Math.min(waitMs, MIN_ROUND_MS) - (now() - started);
      if (early > 0) await sleep(early, options.signal);
    } catch (err) {
      if (options.signal?.aborted || !isOutage(err)) throw err;
      outage = err; // P-SDK-2: ride it out until the deadline
      const pause = Math.min(outageWait(err, backoff.next()), Math.max(0, deadline - now()));
      await sleep(pause, options.signal);
    }
    if (now() >= deadline) throw new WaitTimeoutError<T>(what, timeoutMs, last, outage);
  }
}
