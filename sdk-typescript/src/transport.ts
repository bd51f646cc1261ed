// The one place requests leave the SDK: the generated path types drive openapi-fetch, and
// this wrapper adds timeouts, safe automatic retries and typed errors around every call.
import createClient, { type Client } from "openapi-fetch";
import type { paths } from "./generated/schema.js";
import { CLIENT_RETRY_BASE_MS, CLIENT_RETRY_CAP_MS, RETRY_AFTER_BUDGET_MS as BUDGET_MS } from "./generated/constants.js";
import { Backoff, parseRetryAfter, sleep } from "./backoff.js";
import { connectionError, errorFromResponse, type Orch8Error } from "./errors.js";
import { customFetchDispatcher, LeanHttp, proxyConfigured, type AnswerHead, type LeanAnswer } from "./lean-http.js";
import { CLIENT_RETRY_AFTER_LIMIT_MS, isOutage, jitterRetryAfter } from "./outage.js";
import { USER_AGENT } from "./version.js";

/** Per-call options accepted by every client method. */
export interface CallOptions {
  /** Aborts the call (and its retries); the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Overrides the client's request timeout for this call. */
  timeoutMs?: number;
}

export interface TransportOptions {
  baseUrl: string;
  apiKey?: string;
  /** Sent as X-Tenant-Id on every request (P-SDK-24); no header when absent. */
  tenant?: string;
  timeoutMs: number;
  maxRetries: number;
  fetch?: (input: Request) => Promise<Response>;
  /**
   * Send through LeanHttp (node:http) instead of fetch when the URL is http://, no fetch was
   * given, and neither a proxy variable nor a custom fetch dispatcher is set. The Worker's
   * own client asks for it.
   */
  lean?: boolean;
  /** Waits between retries; tests replace it to run the 30 s Retry-After budget at once. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** What openapi-fetch answers; only the parts the transport needs. */
interface RawResult<T> {
  data?: T;
  error?: unknown;
  response: AnswerHead;
}

/**
 * The worker's client asks Orch8Client for LeanHttp with this option key; not exported from
 * the package, so users keep fetch (and whatever they configured for it).
 */
export const LEAN_HTTP: unique symbol = Symbol("orch8.leanHttp");

/** openapi-fetch's reading of an answer (parseAs json or text), on a LeanHttp answer. */
function parsed(a: LeanAnswer, parseAs: "json" | "text"): RawResult<unknown> {
  const r = a.response;
  const length = r.headers.get("Content-Length");
  if (r.status === 204 || (length === "0" && !r.headers.get("Transfer-Encoding")?.includes("chunked"))) {
    return { response: r };
  }
  if (r.ok) return { data: parseAs === "text" ? a.body : a.body ? JSON.parse(a.body) : undefined, response: r };
  let error: unknown = a.body;
  try {
    error = JSON.parse(a.body);
  } catch {
    // not JSON: the text is the error, as openapi-fetch gives it
  }
  return { error, response: r };
}

const RETRY_INITIAL_MS = CLIENT_RETRY_BASE_MS; // P-SDK-2
const RETRY_MAX_MS = CLIENT_RETRY_CAP_MS;
/** P-SDK-2: answers with Retry-After are retried while the call's waits add up to at most this. */
export const RETRY_AFTER_BUDGET_MS = BUDGET_MS;

/** What send() needs of one request; the generated table supplies method, path and parseAs. */
export interface SendInit {
  path?: Record<string, string>;
  query?: object;
  body?: unknown;
  parseAs: "json" | "text";
  signal: AbortSignal;
}

type LooseRequest = (method: string, url: string, init: object) => Promise<RawResult<unknown>>;

class TimeoutError extends Error {
  constructor(ms: number) {
    super(`timed out (no answer within ${ms} ms)`);
    this.name = "TimeoutError";
  }
}

/** Builds a signal that fires on the caller's abort or after `ms`; `done()` frees both. */
function deadline(ms: number, outer?: AbortSignal): { signal: AbortSignal; done: () => void } {
  // Hand-rolled instead of AbortSignal.any: long-lived outer signals leak listeners there.
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(new TimeoutError(ms)), ms);
  const onAbort = () => ctl.abort(outer?.reason);
  outer?.addEventListener("abort", onAbort, { once: true });
  if (outer?.aborted) ctl.abort(outer.reason);
  return {
    signal: ctl.signal,
    done: () => {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onAbort);
    },
  };
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("aborted", "AbortError");
}

/** Sends requests with timeouts, retries and typed errors. */
export class Transport {
  readonly api: Client<paths>;
  /** Set when this transport sends through node:http (see TransportOptions.lean). */
  readonly lean: LeanHttp | undefined;

  constructor(private readonly opts: TransportOptions) {
    const headers: Record<string, string> = { "User-Agent": USER_AGENT, Accept: "application/json" };
    if (opts.apiKey) headers.Authorization = `Bearer ${opts.apiKey}`; // P-AUTH-1
    if (opts.tenant !== undefined) headers["X-Tenant-Id"] = opts.tenant; // P-SDK-24: the worker's calls too
    this.api = createClient<paths>({
      baseUrl: opts.baseUrl,
      headers,
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
    });
    const env = typeof process === "object" ? process.env : {};
    const plain = opts.baseUrl.startsWith("http://") && !proxyConfigured(env) && !customFetchDispatcher();
    this.lean = opts.lean && !opts.fetch && plain ? new LeanHttp(opts.baseUrl, headers) : undefined;
  }

  /** One request through openapi-fetch (path templating, query and body serialisation). */
  send(method: string, path: string, init: SendInit): Promise<RawResult<unknown>> {
    // Calls with a query keep openapi-fetch's query serialisation; the worker's have none.
    if (this.lean !== undefined && init.query === undefined) return this.sendLean(this.lean, method, path, init);
    return this.viaFetch(method, path, init);
  }

  private viaFetch(method: string, path: string, init: SendInit): Promise<RawResult<unknown>> {
    const params: Record<string, unknown> = {};
    if (init.path) params.path = init.path;
    if (init.query) params.query = init.query;
    const request = this.api.request as unknown as LooseRequest;
    return request(method, path, {
      params,
      ...(init.body !== undefined ? { body: init.body } : {}),
      parseAs: init.parseAs,
      signal: init.signal,
    });
  }

  /** `send` over LeanHttp: the path templated and the body serialised as openapi-fetch does. */
  private async sendLean(lean: LeanHttp, method: string, path: string, init: SendInit): Promise<RawResult<unknown>> {
    const target = path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(String(init.path?.[name])));
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    const answer = await lean.send(method, target, body, init.signal);
    const status = answer.response.status;
    // fetch follows redirects and LeanHttp does not: a redirected call goes through fetch.
    if (status >= 300 && status <= 399 && answer.response.headers.get("Location") !== null) return this.viaFetch(method, path, init);
    return parsed(answer, init.parseAs);
  }

  /**
   * Runs `send` until it answers 2xx, retrying outages only when `safe` (P-SDK-2): up to
   * `maxRetries` times, and beyond that for answers with Retry-After while the call's waits
   * add up to at most 30 s. Resolves to the parsed body (undefined for 204) and the status.
   */
  async call<T>(
    what: string,
    safe: boolean,
    options: CallOptions | undefined,
    send: (signal: AbortSignal) => Promise<RawResult<T>>,
  ): Promise<{ data: T | undefined; status: number }> {
    const outer = options?.signal;
    const timeoutMs = options?.timeoutMs ?? this.opts.timeoutMs;
    const backoff = new Backoff(RETRY_INITIAL_MS, RETRY_MAX_MS);
    const wait = this.opts.sleep ?? sleep;
    let retries = 0; // retries counted against maxRetries
    let granted = 0; // ms of Retry-After the server asked this call to wait (P-SDK-2 budget)
    for (;;) {
      if (outer?.aborted) throw abortReason(outer);
      const { signal, done } = deadline(timeoutMs, outer);
      let err: Orch8Error;
      try {
        const result = await send(signal);
        const status = result.response.status;
        if (result.response.ok) return { data: result.data, status };
        const retryAfter = parseRetryAfter(result.response.headers.get("Retry-After"));
        err = errorFromResponse(status, result.error, retryAfter);
      } catch (e) {
        // The caller gave up (shutdown, quiet): never retry, never disguise it.
        if (outer?.aborted) throw abortReason(outer);
        // P-SDK-22: the message names the server and the innermost cause.
        err = connectionError(e instanceof Error && e.name === "AbortError" ? signal.reason ?? e : e, what, this.opts.baseUrl);
      } finally {
        done();
      }
      // P-SDK-2: operations marked `never` (poll, keyless enqueue, ...) are not repeated;
      // maxRetries 0 turns automatic retries off altogether.
      if (!safe || this.opts.maxRetries <= 0 || !isOutage(err)) throw err;
      const retryAfter = err.retryAfterMs;
      // P-SDK-16: a long Retry-After surfaces (carrying retryAfterMs) instead of blocking.
      if (retryAfter !== undefined && retryAfter > CLIENT_RETRY_AFTER_LIMIT_MS) throw err;
      let delay: number;
      if (retryAfter !== undefined && retryAfter > 0) {
        // P-SDK-2: the server said when; ride it out past maxRetries while the delays it
        // gave add up to at most 30 s (the 0-10% jitter is ours, not counted: as in Python
        // and Go, a single Retry-After: 30 is waited).
        if (granted + retryAfter > RETRY_AFTER_BUDGET_MS) throw err;
        granted += retryAfter;
        delay = jitterRetryAfter(retryAfter);
      } else {
        // No delay given, or Retry-After: 0: the computed backoff within the plain limit,
        // which keeps the loop finite (P-SDK-2, as in Python and Go).
        if (retries >= this.opts.maxRetries) throw err;
        retries++;
        delay = backoff.next();
      }
      await wait(delay, outer);
    }
  }
}
