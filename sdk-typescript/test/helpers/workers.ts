// Runs Workers in-process against a TestServer, with a fetch spy that records every call
// the worker makes (to prove, e.g., that no stale complete was sent).
import { Worker, type WorkerOptions } from "../../src/index.js";
import type { TestServer } from "./server.js";

export interface SpiedCall {
  method: string;
  path: string;
  body: unknown;
  /** HTTP status; "pending" while in flight; "error" when no answer came. */
  status: number | "pending" | "error";
}

export interface RunningWorker {
  worker: Worker;
  done: Promise<void>;
  calls: SpiedCall[];
  /** Stops the worker (if still running) and waits for run() to settle. */
  close(): Promise<void>;
}

let seq = 0;

export function startWorker(server: TestServer, options: Partial<WorkerOptions> & Pick<WorkerOptions, "handlers">): RunningWorker {
  const calls: SpiedCall[] = [];
  const spy = async (req: Request): Promise<Response> => {
    const text = await req.clone().text();
    const call: SpiedCall = { method: req.method, path: new URL(req.url).pathname, body: text ? JSON.parse(text) : undefined, status: "pending" };
    calls.push(call);
    try {
      const res = await fetch(req);
      call.status = res.status;
      return res;
    } catch (err) {
      call.status = "error";
      throw err;
    }
  };
  const worker = new Worker({
    client: server.client({ fetch: spy }),
    workerId: `ts-it-${process.pid}-${++seq}`,
    handleSignals: false,
    ...options,
  });
  const done = worker.run();
  return {
    worker,
    done,
    calls,
    close: async () => {
      await worker.stop();
      await done;
    },
  };
}

/** Simulated work: resolves after `ms`, or early when `signal` fires. */
export const work = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
  });

/** Resolves with the signal's reason once it fires (or rejects after `ms` as a safety net). */
export const aborted = (signal: AbortSignal, ms = 15_000) =>
  new Promise<unknown>((resolve, reject) => {
    if (signal.aborted) return resolve(signal.reason);
    const t = setTimeout(() => reject(new Error("signal never fired")), ms);
    signal.addEventListener("abort", () => { clearTimeout(t); resolve(signal.reason); }, { once: true });
  });
