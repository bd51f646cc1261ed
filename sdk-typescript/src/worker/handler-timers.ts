// P-SDK-29: after run() returns nothing the worker started keeps the process alive. A
// handler deaf to its signal was already failed with `shutdown`, yet its own pending timer
// (`await sleep(60_000)`) would keep Node running past run(), so a SIGTERM from Kubernetes
// ends in SIGKILL. While a worker runs, one async hook marks every async resource created
// under a handler with its owner (as AsyncLocalStorage does, without a second hook and
// without staying on after run()) and notes the handler's timers; the timers of handlers
// still running when run() returns are unref'd. No destroy hook: it would slow every
// promise several times over. Limits: a deaf handler that creates a timer after run()
// returned (while no other worker runs) holds the process again; sockets are not touched.
import { createHook, executionAsyncResource } from "node:async_hooks";

const OWNER = Symbol("orch8.handlerTimers");

interface Unrefable {
  unref(): unknown;
}
type Marked = { [OWNER]?: HandlerTimers };

const hook = createHook({
  init(_asyncId, type, _trigger, resource) {
    const owner = (executionAsyncResource() as Marked)[OWNER];
    if (owner === undefined) return;
    (resource as Marked)[OWNER] = owner; // what it runs later belongs to the handler too
    if (type === "Timeout") owner.note(resource as Unrefable); // setTimeout and setInterval
  },
});
let users = 0;

/** Turns the bookkeeping on while a worker runs; the returned function turns it off. */
export function trackHandlerTimers(): () => void {
  if (users++ === 0) hook.enable();
  let done = false;
  return () => {
    if (done) return;
    done = true;
    if (--users === 0) hook.disable();
  };
}

/** The timers one handler run created (fired ones are swept once collected). */
export class HandlerTimers {
  private timers: Array<WeakRef<Unrefable>> = [];
  private sweepAt = 64;
  private released = false;

  /** Calls `fn` so that what it creates, and what that creates, is marked as this run's. */
  run<T>(fn: () => T): T {
    const resource = executionAsyncResource() as Marked;
    const before = resource[OWNER];
    resource[OWNER] = this;
    try {
      return fn();
    } finally {
      resource[OWNER] = before;
    }
  }

  /** Called by the hook for each timer the handler creates. */
  note(timer: Unrefable): void {
    if (this.released) {
      timer.unref(); // created after release, while another worker still runs
      return;
    }
    this.timers.push(new WeakRef(timer));
    if (this.timers.length >= this.sweepAt) {
      // A long handler's fired timers are collected; forget them (amortised, bounded memory).
      this.timers = this.timers.filter((t) => t.deref() !== undefined);
      this.sweepAt = Math.max(64, this.timers.length * 2);
    }
  }

  /** Lets the process exit despite them: the handler's result is discarded anyway. */
  release(): void {
    this.released = true;
    for (const t of this.timers) t.deref()?.unref();
    this.timers = [];
  }
}
