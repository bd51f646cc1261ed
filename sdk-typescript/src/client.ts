// Orch8Client: one typed method per operation of openapi.yaml, generated with its call
// policy into src/generated/client.ts (P-SDK-2). This file adds what no spec says: where
// the server is, the key, and invoke(), which sends an operation under its policy. Bodies
// use the wire's snake_case names so the seed's example and curl calls read the same.
import { OPERATIONS, Orch8Operations, type Invocation, type OperationName } from "./generated/client.js";
import * as C from "./generated/constants.js";
import { SPEC_SHA256, SPEC_VERSION } from "./generated/spec.js";
import type { Telemetry } from "./telemetry.js";
import { LEAN_HTTP, Transport, type CallOptions } from "./transport.js";
import type { Instance, NewTask, Task } from "./types.js";
import { FINAL_INSTANCE_STATUSES, FINAL_TASK_STATUSES, waitUntilFinal, type WaitOptions } from "./wait.js";

export type { CallOptions } from "./transport.js";
export { OPERATIONS } from "./generated/client.js";
export type { OperationName, OperationPolicy, CallRetry } from "./generated/client.js";

/** Options of `new Orch8Client(...)`; every one may be omitted (P-SDK-1). */
export interface Orch8ClientOptions {
  /** Server address; default `ORCH8_URL`, else `http://localhost:3001`. */
  baseUrl?: string;
  /** Bearer API key; default `ORCH8_API_KEY`, else none. */
  apiKey?: string;
  /**
   * Tenant to act in, sent as `X-Tenant-Id` on every request, the worker's included
   * (P-SDK-24); default `ORCH8_TENANT`, else none (the key's own tenant, or `default`).
   */
  tenant?: string;
  /** Request timeout in ms; default 10000. Long-polls use their wait_ms + 10000. */
  timeoutMs?: number;
  /** Automatic retries of safe calls (P-SDK-2); default 3. */
  maxRetries?: number;
  /** A fetch implementation, e.g. for tests or a proxy agent; default the global fetch. */
  fetch?: (input: Request) => Promise<Response>;
  /**
   * Traces enqueue and enqueueBatch in a producer span and puts its `traceparent` into each
   * task's headers (P-TEL-1), e.g. `openTelemetry()` from "@orch8/sdk/otel". Default: none.
   */
  telemetry?: Telemetry;
  /** @internal The Worker's own client sends over node:http (see Transport); not for users. */
  [LEAN_HTTP]?: boolean;
}

/** P-TEN-2: what a tenant id may be. */
const TENANT_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** P-SDK-24: the tenant option (else ORCH8_TENANT), refused with a TypeError when malformed. */
function resolveTenant(given: string | undefined, env: Record<string, string | undefined>): string | undefined {
  const tenant = given ?? (env.ORCH8_TENANT || undefined);
  if (tenant !== undefined && (typeof tenant !== "string" || !TENANT_ID.test(tenant))) {
    throw new TypeError(`tenant must match ^[A-Za-z0-9_.-]{1,64}$ (P-TEN-2), got ${JSON.stringify(tenant)}`);
  }
  return tenant;
}

/**
 * P-SDK-1: an absolute http(s) URL with a host, else a TypeError naming the value. A URL
 * without a scheme would otherwise fail every request and be retried for ever as an outage.
 */
function checkBaseUrl(value: unknown, source: string): string {
  const refuse = (why: string): never => {
    throw new TypeError(`${source} must be an absolute http:// or https:// URL with a host (P-SDK-1): got ${JSON.stringify(value)} (${why})`);
  };
  if (typeof value !== "string" || value.trim() === "") return refuse("empty");
  // WHATWG parsing forgives "http:host"; the scheme must be spelt out with its "//".
  if (!/^https?:\/\//i.test(value.trim())) return refuse("no http:// or https:// scheme");
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return refuse("not a URL");
  }
  if (url.hostname === "") return refuse("no host");
  return value.trim().replace(/\/+$/, "");
}

// The contract's numbers (generated from x-orch8-constants), under this SDK's public names.
export const DEFAULT_BASE_URL = C.DEFAULT_BASE_URL;
export const DEFAULT_TIMEOUT_MS = C.REQUEST_TIMEOUT_MS;
export const DEFAULT_MAX_RETRIES = C.CLIENT_MAX_RETRIES;
/** The protocol's default long-poll budget (P-POLL-2). */
export const DEFAULT_WAIT_MS = C.DEFAULT_POLL_WAIT_MS;
/** Added to a long-poll's wait_ms to get its request timeout (P-SDK-1). */
export const LONG_POLL_SLACK_MS = C.LONG_POLL_MARGIN_MS;

type Keyed = { idempotency_key?: unknown };

/** x-orch8-retry `idempotency-key`: a repeat is safe only when the server can dedupe it:
 * the body has a key, or every item of its batch array (the operation's `items`, from the
 * spec's `body-argument`: P-TASK-3, P-WF-14) has. */
function carriesKeys(body: unknown, itemsField: string | null): boolean {
  if (typeof body !== "object" || body === null) return false;
  if (itemsField !== null) {
    const items = (body as Record<string, unknown>)[itemsField];
    return Array.isArray(items) && items.length > 0 && items.every((t: Keyed) => !!t?.idempotency_key);
  }
  return !!(body as Keyed).idempotency_key;
}

/** Typed client of the Orch8 HTTP API. */
export class Orch8Client extends Orch8Operations {
  readonly baseUrl: string;
  /** The tenant sent as `X-Tenant-Id` on every request, if any (P-SDK-24). */
  readonly tenant: string | undefined;
  /** The contract this SDK was generated from. */
  readonly spec = { version: SPEC_VERSION, sha256: SPEC_SHA256 } as const;
  /** The telemetry given in the options, if any (the Worker reuses it by default). */
  readonly telemetry: Telemetry | undefined;
  private readonly t: Transport;

  constructor(options: Orch8ClientOptions = {}) {
    super();
    const env = typeof process === "object" ? process.env : {};
    // An empty ORCH8_URL counts as unset (as in the Go SDK); an empty baseUrl option is refused.
    const fromEnv = env.ORCH8_URL || undefined;
    const source = options.baseUrl !== undefined ? "baseUrl" : fromEnv !== undefined ? "ORCH8_URL" : "the default URL";
    this.baseUrl = checkBaseUrl(options.baseUrl ?? fromEnv ?? DEFAULT_BASE_URL, source);
    const apiKey = options.apiKey ?? env.ORCH8_API_KEY;
    this.tenant = resolveTenant(options.tenant, env);
    this.t = new Transport({
      baseUrl: this.baseUrl,
      ...(apiKey ? { apiKey } : {}),
      ...(this.tenant !== undefined ? { tenant: this.tenant } : {}),
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options[LEAN_HTTP] ? { lean: true } : {}),
    });
    this.telemetry = options.telemetry;
  }

  /**
   * Waits until the instance is completed, failed or cancelled and returns it, whatever its
   * final status; throws WaitTimeoutError (carrying the last state) after `timeoutMs`
   * (default 5 minutes). Long-polls `GET /instances/{id}?wait_ms=` (P-SDK-25).
   */
  waitInstance(instanceId: string, options: WaitOptions = {}): Promise<Instance> {
    return waitUntilFinal(
      `instance ${instanceId}`,
      (wait_ms, signal) => this.getInstance(instanceId, { wait_ms }, signal ? { signal } : undefined),
      (status) => FINAL_INSTANCE_STATUSES.has(status as Instance["status"]),
      options,
    );
  }

  /**
   * Waits until the task is completed, failed, cancelled or expired and returns it; throws
   * WaitTimeoutError (carrying the last state) after `timeoutMs` (default 5 minutes).
   * Long-polls `GET /tasks/{id}?wait_ms=` (P-SDK-25).
   */
  waitTask(taskId: string, options: WaitOptions = {}): Promise<Task> {
    return waitUntilFinal(
      `task ${taskId}`,
      // getTask keeps its 1.4 signature (P-SDK-25), so the wait_ms round is invoked directly.
      (wait_ms, signal) => this.invoke<Task>("getTask", { path: { task_id: taskId }, query: { wait_ms } }, signal ? { signal } : undefined),
      (status) => FINAL_TASK_STATUSES.has(status as Task["status"]),
      options,
    );
  }

  protected invoke<T>(name: OperationName, request: Invocation, call: CallOptions | undefined): Promise<T> {
    const tel = this.telemetry;
    const produces = OPERATIONS[name].produces;
    if (tel === undefined || produces === null) return this.request(name, request, call);
    return this.traced(tel, name, produces === "tasks", request, call);
  }

  /**
   * P-TEL-1: a call whose body creates tasks (x-orch8-sdk produces) inside the telemetry's
   * producer span, with trace headers injected; a batch lists them in `tasks`.
   */
  private async traced<T>(tel: Telemetry, name: OperationName, batch: boolean, request: Invocation, call: CallOptions | undefined): Promise<T> {
    const body = request.body as NewTask | { tasks: NewTask[] };
    const tasks = batch ? (body as { tasks: NewTask[] }).tasks : [body as NewTask];
    let answer: unknown;
    await tel.enqueue(tasks, batch, async (sent) => {
      answer = await this.request(name, { ...request, body: batch ? { ...body, tasks: sent } : sent[0] }, call);
      return batch ? (answer as { tasks: Task[] }).tasks.map((t) => t.id) : [(answer as Task).id];
    });
    return answer as T;
  }

  private async request<T>(name: OperationName, request: Invocation, call: CallOptions | undefined): Promise<T> {
    const op = OPERATIONS[name];
    const safe = op.retry === "safe" || (op.retry === "idempotency-key" && carriesKeys(request.body, op.items));
    let timeoutMs = call?.timeoutMs;
    if (timeoutMs === undefined && op.longPoll) {
      // wait_ms is in the body (polls, default 30 s) or in the query (getTask, getInstance:
      // P-WF-9, default 0, so without it the ordinary timeout applies).
      const queryWait = (request.query as { wait_ms?: number } | undefined)?.wait_ms;
      const wait = (request.body as { wait_ms?: number } | undefined)?.wait_ms ?? queryWait;
      if (request.body !== undefined || queryWait !== undefined) {
        timeoutMs = (wait ?? DEFAULT_WAIT_MS) + LONG_POLL_SLACK_MS; // P-SDK-1
      }
    }
    const r = await this.t.call(name, safe, { ...call, ...(timeoutMs === undefined ? {} : { timeoutMs }) }, (signal) =>
      this.t.send(op.method, op.path, {
        ...(request.path ? { path: request.path } : {}),
        ...(request.query ? { query: request.query } : {}),
        ...(request.body !== undefined ? { body: request.body } : {}),
        parseAs: op.parseAs,
        signal,
      }),
    );
    return (r.status === 204 || r.data === undefined ? null : r.data) as T;
  }
}
