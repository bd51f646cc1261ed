// The dashboard's only way to the server: the public API of openapi.yaml, with the same
// bearer API key as any client (P-AUTH-1) and the selected tenant as X-Tenant-Id (P-TEN-2).
// Types are the TypeScript SDK's, generated from the same contract (one generator of
// TypeScript types for the whole repository; the bundle keeps none of them).
import type { components } from "../../../sdk-typescript/src/generated/schema";

type Schemas = components["schemas"];
export type Task = Schemas["Task"];
export type TaskPage = Schemas["TaskPage"];
export type TaskStatus = Schemas["TaskStatus"];
export type TaskWaiting = Schemas["TaskWaiting"];
export type Attempt = Schemas["Attempt"];
export type AttemptList = Schemas["AttemptList"];
export type Worker = Schemas["Worker"];
export type WorkerList = Schemas["WorkerList"];
export type QueueStats = Schemas["QueueStats"];
export type QueueStatsList = Schemas["QueueStatsList"];
export type ServerInfo = Schemas["ServerInfo"];
export type Problem = Schemas["Problem"];
export type ManualCompletion = Schemas["ManualCompletion"];
export type ManualFailure = Schemas["ManualFailure"];
export type TaskCancellation = Schemas["TaskCancellation"];
export type TaskRetry = Schemas["TaskRetry"];
export type BlockedReason = Schemas["BlockedReason"];
export type QueueControl = Schemas["QueueControl"];
export type HandlerControl = Schemas["HandlerControl"];
export type QueueHistory = Schemas["QueueHistory"];
export type QueueHistoryPoint = Schemas["QueueHistoryPoint"];
export type Principal = Schemas["Principal"];
export type Role = Schemas["Role"];
export type TenantList = Schemas["TenantList"];
export type Instance = Schemas["Instance"];
export type InstancePage = Schemas["InstancePage"];
export type SequencePage = Schemas["SequencePage"];
export type Sequence = Schemas["Sequence"];
export type InstanceStatus = Schemas["InstanceStatus"];
export type StepRun = Schemas["StepRun"];

export const INSTANCE_STATUSES: InstanceStatus[] = ["running", "completed", "failed", "cancelled"];

export const TASK_STATUSES: TaskStatus[] = [
  "pending",
  "scheduled",
  "running",
  "completed",
  "failed",
  "cancelled",
  "expired",
];

const KEY_STORAGE = "orch8.apiKey";
const TIMEOUT_MS = 10_000;

/** A failed call: `status` 0 means the server could not be reached at all. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem | null,
    message: string,
  ) {
    super(message);
  }

  get unreachable(): boolean {
    return this.status === 0;
  }
}

/** Asks the operator for an API key; resolves with it (the prompt stays until one is given). */
export type KeyPrompt = (rejected: boolean) => Promise<string>;
let keyPrompt: KeyPrompt | null = null;
let pendingKey: Promise<string> | null = null;

export function onUnauthorized(prompt: KeyPrompt): void {
  keyPrompt = prompt;
}

// A new key from the prompt may have another role and tenant: the page asks /whoami again.
let keyChanged: () => void = () => {};
export function onKeyChange(listener: () => void): void {
  keyChanged = listener;
}

// P-AUTH-3: every 403 also goes to the page's banner, whichever view made the call.
let forbidden: (err: ApiError) => void = () => {};
export function onForbidden(listener: (err: ApiError) => void): void {
  forbidden = listener;
}

// P-TEN-2: the tenant every call acts in; null sends no header (the key's own tenant).
let tenant: string | null = null;
export function useTenant(name: string | null): void {
  tenant = name;
}

export function apiKey(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY_STORAGE);
}

// Several calls may get 401 at once (one refresh fetches queues, workers and tasks):
// they share one prompt.
function askForKey(rejected: boolean): Promise<string> {
  if (!keyPrompt) return Promise.reject(new Error("no key prompt"));
  pendingKey ??= keyPrompt(rejected).then((key) => {
    sessionStorage.setItem(KEY_STORAGE, key);
    pendingKey = null;
    keyChanged();
    return key;
  });
  return pendingKey;
}

async function send(method: string, path: string, body: unknown, withTenant: boolean): Promise<Response> {
  const headers: Record<string, string> = { Accept: "application/json" };
  const key = apiKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (withTenant && tenant !== null) headers["X-Tenant-Id"] = tenant;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  try {
    return await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
      cache: "no-store",
    });
  } catch (err) {
    const why = err instanceof DOMException && err.name === "TimeoutError" ? "timed out" : "connection failed";
    throw new ApiError(0, null, `cannot reach the server (${why})`);
  }
}

async function problemOf(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => "");
  let problem: Problem | null = null;
  try {
    const parsed = JSON.parse(text) as Partial<Problem>;
    if (parsed && typeof parsed === "object" && typeof parsed.code === "string") {
      problem = { type: "", title: "", detail: "", errors: [], status: res.status, ...parsed } as Problem;
    }
  } catch {
    // Not problem+json (a proxy in between, say): fall back to the status line.
  }
  const message = problem ? `${problem.title}: ${problem.detail}` : `HTTP ${res.status} ${res.statusText}`;
  return new ApiError(res.status, problem, message);
}

/** Call the API; a 401 asks for a key and repeats the call with it; a 403 is also reported. */
export async function call<T>(method: string, path: string, body?: unknown, withTenant = true): Promise<T> {
  for (;;) {
    const sentKey = apiKey();
    const res = await send(method, path, body, withTenant);
    if (res.status === 401 && keyPrompt) {
      // A key another call just stored may already be the right one: retry with it first.
      // Otherwise ask; a key was sent, so the server refused it, and the prompt says so.
      if (apiKey() === sentKey) await askForKey(sentKey !== null);
      continue;
    }
    if (!res.ok) {
      const err = await problemOf(res);
      if (res.status === 403) forbidden(err);
      throw err;
    }
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }
}

export function query(params: Record<string, string | string[] | undefined>): string {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === "") continue;
    for (const v of Array.isArray(value) ? value : [value]) q.append(name, v);
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

const enc = encodeURIComponent;

export const api = {
  info: () => call<ServerInfo>("GET", "/info"),
  // P-AUTH-5, without X-Tenant-Id: the key's own tenant, even when the stored choice is refused.
  whoami: () => call<Principal>("GET", "/whoami", undefined, false),
  // P-TEN-4: admin only (and any caller of a server without keys).
  tenants: () => call<TenantList>("GET", "/tenants", undefined, false),
  queues: () => call<QueueStatsList>("GET", "/queues"),
  // P-OBS-5: the queue's last hour, one point per minute.
  queueHistory: (queueName: string) => call<QueueHistory>("GET", `/queues/${enc(queueName)}/history`),
  // P-CTRL-1: pause / resume; P-CTRL-2: running caps (null removes the cap).
  pauseQueue: (queueName: string) => call<QueueControl>("POST", `/queues/${enc(queueName)}/pause`),
  resumeQueue: (queueName: string) => call<QueueControl>("POST", `/queues/${enc(queueName)}/resume`),
  setQueueLimit: (queueName: string, maxRunning: number | null) =>
    call<QueueControl>("PUT", `/queues/${enc(queueName)}/limit`, { max_running: maxRunning }),
  setHandlerLimit: (handlerName: string, maxRunning: number | null) =>
    call<HandlerControl>("PUT", `/handlers/${enc(handlerName)}/limit`, { max_running: maxRunning }),
  workers: () => call<WorkerList>("GET", "/workers"),
  tasks: (params: Record<string, string | string[] | undefined>) =>
    call<TaskPage>("GET", `/tasks${query(params)}`),
  task: (id: string) => call<Task>("GET", `/tasks/${enc(id)}`),
  attempts: (id: string) => call<AttemptList>("GET", `/tasks/${enc(id)}/attempts`),
  // P-MANUAL-1: an operator resolves a task by hand.
  complete: (id: string, body: ManualCompletion) => call<Task>("POST", `/tasks/${enc(id)}/complete`, body),
  fail: (id: string, body: ManualFailure) => call<Task>("POST", `/tasks/${enc(id)}/fail`, body),
  cancel: (id: string, body: TaskCancellation) => call<Task>("POST", `/tasks/${enc(id)}/cancel`, body),
  retry: (id: string, body: TaskRetry) => call<Task>("POST", `/tasks/${enc(id)}/retry`, body),
  // Workflows (P-WF-4..9): list and read (producer, operator), cancel (producer, operator),
  // retry a failed instance from its failed step (operator).
  instances: (params: Record<string, string | string[] | undefined>) =>
    call<InstancePage>("GET", `/instances${query(params)}`),
  // P-WF-1: operator only (the instance list's sequence suggestions).
  sequences: () => call<SequencePage>("GET", "/sequences?limit=100"),
  // P-WF-1: operator only (the instance page's router routes and catch / finally lists).
  sequence: (name: string, version: number) => call<Sequence>("GET", `/sequences/${enc(name)}${query({ version: String(version) })}`),
  instance: (id: string) => call<Instance>("GET", `/instances/${enc(id)}`),
  cancelInstance: (id: string, body: TaskCancellation) => call<Instance>("POST", `/instances/${enc(id)}/cancel`, body),
  retryInstance: (id: string) => call<Instance>("POST", `/instances/${enc(id)}/retry`),
  // P-WORKER-4: operator directives reach the worker on its next heartbeat.
  directive: (workerId: string, action: "quiet" | "resume" | "terminate") =>
    call<Worker>("POST", `/workers/${enc(workerId)}/${action}`),
};
