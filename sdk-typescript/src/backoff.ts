// Exponential backoff with full jitter, shared by the client's safe retries (P-SDK-2) and
// the worker's outage backoff (P-SDK-9). Full jitter: a uniform draw in [0, cap], so a
// fleet of workers that lost the server together does not come back in lock step.

/** Backoff state: `next()` gives the next delay, `reset()` starts over after a success. */
export class Backoff {
  private attempt = 0;

  constructor(
    readonly initialMs: number,
    readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** The ceiling of the next delay (before jitter). */
  ceiling(): number {
    return Math.min(this.maxMs, this.initialMs * 2 ** this.attempt);
  }

  /** The next delay in ms, uniformly drawn from [0, ceiling], and advances the state. */
  next(): number {
    const delay = Math.floor(this.random() * this.ceiling());
    this.attempt = Math.min(this.attempt + 1, 30);
    return delay;
  }

  reset(): void {
    this.attempt = 0;
  }
}

/**
 * Resolves after `ms`, or at once (without throwing) when any of `signals` aborts. Takes
 * several signals itself rather than AbortSignal.any (Node 20.3+), and frees its listeners.
 */
export function sleep(ms: number, signals?: AbortSignal | readonly AbortSignal[]): Promise<void> {
  const list = signals === undefined ? [] : Array.isArray(signals) ? signals : [signals as AbortSignal];
  return new Promise((resolve) => {
    // ms <= 0 still waits one timer tick: a loop that retries at once must not starve timers.
    if (list.some((s) => s.aborted)) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      for (const s of list) s.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    for (const s of list) s.addEventListener("abort", done, { once: true });
  });
}

/** Parses Retry-After (delay seconds or an HTTP date) into milliseconds. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000));
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
