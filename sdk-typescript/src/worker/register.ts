// Registration (P-WORKER-1, P-SDK-21): the worker's first call, repeated through outages
// (P-SDK-9) and refused keys (P-SDK-24) until it is answered or the worker stops.
import type { Orch8Client } from "../client.js";
import { Backoff, sleep } from "../backoff.js";
import { NotFoundError, ValidationError } from "../errors.js";
import { outageWait } from "../outage.js";
import type { WorkerInfo, WorkerRegistration } from "../types.js";
import { describeCause } from "./cause.js";
import { OUTAGE_INITIAL_MS, OUTAGE_MAX_MS } from "./executor.js";
import type { Logger } from "./stats.js";

export interface RegisterDeps {
  client: Orch8Client;
  registration: WorkerRegistration;
  /** Fires when shutdown begins: registration stops trying. */
  stop: AbortSignal;
  log: Logger;
  /** A failed attempt to report (log line, onError); `extra` says when the next one goes. */
  error(err: unknown, extra: string): void;
}

/** The server's answer, or undefined when the worker stopped before one came. */
export async function registerUntilAnswered(d: RegisterDeps): Promise<WorkerInfo | undefined> {
  const backoff = new Backoff(OUTAGE_INITIAL_MS, OUTAGE_MAX_MS);
  while (!d.stop.aborted) {
    try {
      return await d.client.registerWorker(d.registration, { signal: d.stop });
    } catch (err) {
      if (d.stop.aborted) break; // stopped while registering
      // A rejected registration will not fix itself: fail run(). A refused key (401/403)
      // may be fixed on the server (SIGHUP): keep trying with the outage backoff (P-SDK-24).
      if (err instanceof ValidationError || err instanceof NotFoundError) {
        d.log.error(`orch8: worker ${d.registration.worker_id} registration refused (${describeCause(err)})`);
        throw err;
      }
      const wait = outageWait(err, backoff.next());
      d.error(err, `; retrying in ${wait} ms`);
      await sleep(wait, d.stop);
    }
  }
  return undefined;
}
