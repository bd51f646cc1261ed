// Registration (P-WORKER-1, P-SDK-21): the worker's first call, repeated through outages
// (P-SDK-9, P-SDK-16) and refused keys (P-SDK-24) until it is answered or the worker
// stops. Any other answer is a configuration error that stops the worker (P-SDK-28).
import type { Orch8Client } from "../client.js";
import { Backoff, sleep } from "../backoff.js";
import { AuthError, ForbiddenError, Orch8Error } from "../errors.js";
import { isOutage, outageWait } from "../outage.js";
import type { WorkerInfo, WorkerRegistration } from "../types.js";
import { describeCause } from "./cause.js";
import { OUTAGE_INITIAL_MS, OUTAGE_MAX_MS } from "./executor.js";
import { answerFields, type WorkerLog } from "./logs.js";

export interface RegisterDeps {
  client: Orch8Client;
  registration: WorkerRegistration;
  /** Fires when shutdown begins: registration stops trying. */
  stop: AbortSignal;
  log: WorkerLog;
  /** A failed attempt to report (log line, onError); the next one goes in `waitMs`. */
  error(err: unknown, waitMs: number): void;
}

/**
 * P-SDK-28: the error run() rejects with when registration is answered with neither
 * success, an outage nor 401/403; it names the server URL, the status and the code.
 */
export function configurationError(baseUrl: string, err: unknown): Orch8Error {
  if (!(err instanceof Orch8Error)) {
    return new Orch8Error(`worker registration at ${baseUrl} failed: ${describeCause(err)}`, { status: 0, code: "registration_failed", cause: err });
  }
  const detail = err.problem?.detail ? `: ${err.problem.detail}` : "";
  // Same class as the answer's error (NotFoundError for a 404 ...): every one is an Orch8Error.
  const cls = err.constructor as new (message: string, init: ConstructorParameters<typeof Orch8Error>[1]) => Orch8Error;
  return new cls(
    `worker registration at ${baseUrl} refused with HTTP ${err.status} ${err.code}${detail} (is this an Orch8 server?)`,
    { status: err.status, code: err.code, ...(err.problem ? { problem: err.problem } : {}), cause: err },
  );
}

/** True for answers worth waiting out: outages (P-SDK-16) and refused keys (P-SDK-24). */
function worthRetrying(err: unknown): boolean {
  return isOutage(err) || err instanceof AuthError || err instanceof ForbiddenError;
}

/** The server's answer, or undefined when the worker stopped before one came. */
export async function registerUntilAnswered(d: RegisterDeps): Promise<WorkerInfo | undefined> {
  const backoff = new Backoff(OUTAGE_INITIAL_MS, OUTAGE_MAX_MS);
  while (!d.stop.aborted) {
    try {
      return await d.client.registerWorker(d.registration, { signal: d.stop });
    } catch (err) {
      if (d.stop.aborted) break; // stopped while registering
      // P-SDK-28: a 404, 405 or 501 (not an Orch8 server), a 422 ... will not fix itself.
      // A refused key (401/403) may be fixed on the server (SIGHUP): keep trying (P-SDK-24).
      if (!worthRetrying(err)) {
        const fatal = configurationError(d.client.baseUrl, err);
        d.log.line("error", "config_error", `registration at ${d.client.baseUrl} refused for good; the worker stops`,
          { url: d.client.baseUrl, ...answerFields(err) }, describeCause(err));
        throw fatal;
      }
      const wait = outageWait(err, backoff.next());
      d.error(err, wait);
      await sleep(wait, d.stop);
    }
  }
  return undefined;
}
