// Orch8Client: one typed method per operation of openapi.yaml. The worker methods keep the
// seed's names and shapes (pollTask, completeTask, failTask, heartbeat); bodies use the
// wire's snake_case names so the seed's example and curl calls read the same.
import { SPEC_SHA256, SPEC_VERSION } from "./generated/spec.js";
import { Transport, type CallOptions } from "./transport.js";
import type {
  AttemptList, BatchOutcome, ClaimedTask, HealthStatus, ListTasksQuery, ListWorkersQuery,
  ManualCompletion, ManualFailure, NewTask, PollBatchOptions, PollBatchResult, PollOptions, QueueStatsList, QueueStatsQuery,
  ServerInfo, Task, TaskCancellation, TaskCompletion, TaskCompletionItem, TaskFailureItem,
  TaskFailureReport, TaskHeartbeat, TaskLeaseStatus, TaskOutcome, TaskPage, TaskRelease,
  TaskRetry, WorkerHeartbeat, WorkerHeartbeatResult, WorkerInfo, WorkerList, WorkerRegistration,
} from "./types.js";

export type { CallOptions } from "./transport.js";

/** Options of `new Orch8Client(...)`; every one may be omitted (P-SDK-1). */
export interface Orch8ClientOptions {
  /** Server address; default `ORCH8_URL`, else `http://localhost:3001`. */
  baseUrl?: string;
  /** Bearer API key; default `ORCH8_API_KEY`, else none. */
  apiKey?: string;
  /** Request timeout in ms; default 10000. Long-polls use their wait_ms + 10000. */
  timeoutMs?: number;
  /** Automatic retries of safe calls (P-SDK-2); default 3. */
  maxRetries?: number;
  /** A fetch implementation, e.g. for tests or a proxy agent; default the global fetch. */
  fetch?: (input: Request) => Promise<Response>;
}

export const DEFAULT_BASE_URL = "http://localhost:3001";
export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_RETRIES = 3;
/** The protocol's default long-poll budget (P-POLL-2). */
export const DEFAULT_WAIT_MS = 30_000;
/** Added to a long-poll's wait_ms to get its request timeout (P-SDK-1). */
export const LONG_POLL_SLACK_MS = 10_000;

const p = (task_id: string) => ({ params: { path: { task_id } } });
const w = (worker_id: string) => ({ params: { path: { worker_id } } });

/** Typed client of the Orch8 HTTP API. */
export class Orch8Client {
  readonly baseUrl: string;
  /** The contract this SDK was generated from. */
  readonly spec = { version: SPEC_VERSION, sha256: SPEC_SHA256 } as const;
  private readonly t: Transport;

  constructor(options: Orch8ClientOptions = {}) {
    const env = typeof process === "object" ? process.env : {};
    this.baseUrl = (options.baseUrl ?? env.ORCH8_URL ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    const apiKey = options.apiKey ?? env.ORCH8_API_KEY;
    this.t = new Transport({
      baseUrl: this.baseUrl,
      ...(apiKey ? { apiKey } : {}),
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxRetries: options.maxRetries ?? DEFAULT_MAX_RETRIES,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  private get api() {
    return this.t.api;
  }

  private async must<T>(r: Promise<{ data: T | undefined; status: number }>): Promise<T> {
    return (await r).data as T;
  }

  // --- worker loop (seed 000) -------------------------------------------------------

  /** Claims one task, long-polling up to wait_ms; `null` on 204 (P-POLL-1). Never retried. */
  async pollTask(options: PollOptions = {}, call?: CallOptions): Promise<ClaimedTask | null> {
    const timeoutMs = call?.timeoutMs ?? (options.wait_ms ?? DEFAULT_WAIT_MS) + LONG_POLL_SLACK_MS;
    const r = await this.t.call("pollTask", false, { ...call, timeoutMs }, (signal) =>
      this.api.POST("/workers/tasks/poll", { body: options, signal }),
    );
    return r.status === 204 || r.data === undefined ? null : r.data;
  }

  /** Claims up to batch_size tasks in one long-poll (P-POLL-5). Never retried. */
  async pollTasks(options: PollBatchOptions = {}, call?: CallOptions): Promise<PollBatchResult> {
    const timeoutMs = call?.timeoutMs ?? (options.wait_ms ?? DEFAULT_WAIT_MS) + LONG_POLL_SLACK_MS;
    return this.must(this.t.call("pollTasks", false, { ...call, timeoutMs }, (signal) =>
      this.api.POST("/workers/tasks/poll/batch", { body: options, signal }),
    ));
  }

  /** Reports success; idempotent per lease (P-IDEM-1), so retried. */
  completeTask(taskId: string, body: TaskCompletion = {}, call?: CallOptions): Promise<TaskOutcome> {
    return this.must(this.t.call("completeTask", true, call, (signal) =>
      this.api.POST("/workers/tasks/{task_id}/complete", { ...p(taskId), body, signal }),
    ));
  }

  /** Reports failure; `retryable: true` re-queues under the retry policy (P-RETRY-1). */
  failTask(taskId: string, body: TaskFailureReport, call?: CallOptions): Promise<TaskOutcome> {
    return this.must(this.t.call("failTask", true, call, (signal) =>
      this.api.POST("/workers/tasks/{task_id}/fail", { ...p(taskId), body, signal }),
    ));
  }

  /** Extends the task's lease; may carry progress and a checkpoint (P-LEASE-5, P-CKPT-1). */
  heartbeat(taskId: string, body: TaskHeartbeat = {}, call?: CallOptions): Promise<TaskLeaseStatus> {
    return this.must(this.t.call("heartbeat", true, call, (signal) =>
      this.api.POST("/workers/tasks/{task_id}/heartbeat", { ...p(taskId), body, signal }),
    ));
  }

  /** Alias of `heartbeat`, named after the operation id. */
  heartbeatTask(taskId: string, body: TaskHeartbeat = {}, call?: CallOptions): Promise<TaskLeaseStatus> {
    return this.heartbeat(taskId, body, call);
  }

  /** Gives a claimed task back without spending an attempt (P-LEASE-7). */
  releaseTask(taskId: string, body: TaskRelease = {}, call?: CallOptions): Promise<TaskOutcome> {
    return this.must(this.t.call("releaseTask", true, call, (signal) =>
      this.api.POST("/workers/tasks/{task_id}/release", { ...p(taskId), body, signal }),
    ));
  }

  /** Completes up to 100 tasks with one status per item (P-BATCH-1). */
  completeTasks(items: TaskCompletionItem[], call?: CallOptions): Promise<BatchOutcome> {
    return this.must(this.t.call("completeTasks", true, call, (signal) =>
      this.api.POST("/workers/tasks/complete/batch", { body: { items }, signal }),
    ));
  }

  /** Fails up to 100 tasks with one status per item (P-BATCH-1). */
  failTasks(items: TaskFailureItem[], call?: CallOptions): Promise<BatchOutcome> {
    return this.must(this.t.call("failTasks", true, call, (signal) =>
      this.api.POST("/workers/tasks/fail/batch", { body: { items }, signal }),
    ));
  }

  // --- producers and operators ------------------------------------------------------

  /** Enqueues one task (P-TASK-1); retried only when it carries an idempotency_key. */
  enqueue(task: NewTask, call?: CallOptions): Promise<Task> {
    return this.must(this.t.call("enqueue", task.idempotency_key !== undefined, call, (signal) =>
      this.api.POST("/tasks", { body: task, signal }),
    ));
  }

  /** Enqueues 1-100 tasks atomically (P-TASK-2); retried only when every task has a key. */
  async enqueueBatch(tasks: NewTask[], call?: CallOptions): Promise<Task[]> {
    const safe = tasks.length > 0 && tasks.every((t) => t.idempotency_key !== undefined);
    const r = await this.must(this.t.call("enqueueBatch", safe, call, (signal) =>
      this.api.POST("/tasks/batch", { body: { tasks }, signal }),
    ));
    return r.tasks;
  }

  getTask(taskId: string, call?: CallOptions): Promise<Task> {
    return this.must(this.t.call("getTask", true, call, (signal) =>
      this.api.GET("/tasks/{task_id}", { ...p(taskId), signal }),
    ));
  }

  /** One page of tasks, newest first; pass `next_cursor` back as `cursor`. */
  listTasks(query: ListTasksQuery = {}, call?: CallOptions): Promise<TaskPage> {
    return this.must(this.t.call("listTasks", true, call, (signal) =>
      this.api.GET("/tasks", { params: { query }, signal }),
    ));
  }

  /** Cancels a task (P-CANCEL-1). Never retried. */
  cancelTask(taskId: string, body: TaskCancellation = {}, call?: CallOptions): Promise<Task> {
    return this.must(this.t.call("cancelTask", false, call, (signal) =>
      this.api.POST("/tasks/{task_id}/cancel", { ...p(taskId), body, signal }),
    ));
  }

  /** Re-runs a failed, cancelled or expired task (P-RETRY-6). Never retried. */
  retryTask(taskId: string, body: TaskRetry = {}, call?: CallOptions): Promise<Task> {
    return this.must(this.t.call("retryTask", false, call, (signal) =>
      this.api.POST("/tasks/{task_id}/retry", { ...p(taskId), body, signal }),
    ));
  }

  /** Operator completes a pending, scheduled or running task by hand (P-MANUAL-1). Never retried. */
  completeTaskManually(taskId: string, body: ManualCompletion = {}, call?: CallOptions): Promise<Task> {
    return this.must(this.t.call("completeTaskManually", false, call, (signal) =>
      this.api.POST("/tasks/{task_id}/complete", { ...p(taskId), body, signal }),
    ));
  }

  /** Operator fails a task permanently by hand, code `manual` unless given (P-MANUAL-1). Never retried. */
  failTaskManually(taskId: string, body: ManualFailure, call?: CallOptions): Promise<Task> {
    return this.must(this.t.call("failTaskManually", false, call, (signal) =>
      this.api.POST("/tasks/{task_id}/fail", { ...p(taskId), body, signal }),
    ));
  }

  listTaskAttempts(taskId: string, call?: CallOptions): Promise<AttemptList> {
    return this.must(this.t.call("listTaskAttempts", true, call, (signal) =>
      this.api.GET("/tasks/{task_id}/attempts", { ...p(taskId), signal }),
    ));
  }

  // --- workers ------------------------------------------------------------------------

  /** Registers (or re-registers) a worker (P-WORKER-1). */
  registerWorker(registration: WorkerRegistration, call?: CallOptions): Promise<WorkerInfo> {
    return this.must(this.t.call("registerWorker", true, call, (signal) =>
      this.api.POST("/workers", { body: registration, signal }),
    ));
  }

  /** One heartbeat for the worker and every task it holds (P-WORKER-2, P-WORKER-3). */
  heartbeatWorker(workerId: string, body: WorkerHeartbeat = {}, call?: CallOptions): Promise<WorkerHeartbeatResult> {
    return this.must(this.t.call("heartbeatWorker", true, call, (signal) =>
      this.api.POST("/workers/{worker_id}/heartbeat", { ...w(workerId), body, signal }),
    ));
  }

  /** Deregisters a worker; tasks it holds are reclaimed (P-WORKER-5). */
  deregisterWorker(workerId: string, call?: CallOptions): Promise<WorkerInfo> {
    return this.must(this.t.call("deregisterWorker", true, call, (signal) =>
      this.api.DELETE("/workers/{worker_id}", { ...w(workerId), signal }),
    ));
  }

  listWorkers(query: ListWorkersQuery = {}, call?: CallOptions): Promise<WorkerList> {
    return this.must(this.t.call("listWorkers", true, call, (signal) =>
      this.api.GET("/workers", { params: { query }, signal }),
    ));
  }

  getWorker(workerId: string, call?: CallOptions): Promise<WorkerInfo> {
    return this.must(this.t.call("getWorker", true, call, (signal) =>
      this.api.GET("/workers/{worker_id}", { ...w(workerId), signal }),
    ));
  }

  /** Operator directive: stop claiming, finish in-flight work (P-WORKER-4). */
  quietWorker(workerId: string, call?: CallOptions): Promise<WorkerInfo> {
    return this.must(this.t.call("quietWorker", false, call, (signal) =>
      this.api.POST("/workers/{worker_id}/quiet", { ...w(workerId), signal }),
    ));
  }

  /** Operator directive: back to running after quiet (P-WORKER-4). */
  resumeWorker(workerId: string, call?: CallOptions): Promise<WorkerInfo> {
    return this.must(this.t.call("resumeWorker", false, call, (signal) =>
      this.api.POST("/workers/{worker_id}/resume", { ...w(workerId), signal }),
    ));
  }

  /** Operator directive: shut down gracefully (P-WORKER-4). */
  terminateWorker(workerId: string, call?: CallOptions): Promise<WorkerInfo> {
    return this.must(this.t.call("terminateWorker", false, call, (signal) =>
      this.api.POST("/workers/{worker_id}/terminate", { ...w(workerId), signal }),
    ));
  }

  // --- observability ------------------------------------------------------------------

  /** Depth and active pollers per queue and handler (P-OBS-1). */
  queueStats(query: QueueStatsQuery = {}, call?: CallOptions): Promise<QueueStatsList> {
    return this.must(this.t.call("queueStats", true, call, (signal) =>
      this.api.GET("/queues", { params: { query }, signal }),
    ));
  }

  /** Server build, contract version and effective defaults. */
  serverInfo(call?: CallOptions): Promise<ServerInfo> {
    return this.must(this.t.call("serverInfo", true, call, (signal) => this.api.GET("/info", { signal })));
  }

  /** Readiness (P-OBS-2): resolves when ready, rejects with UnavailableError otherwise. */
  ready(call?: CallOptions): Promise<HealthStatus> {
    return this.must(this.t.call("ready", false, call, (signal) => this.api.GET("/health/ready", { signal })));
  }
}
