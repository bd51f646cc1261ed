// The worker runtime of docs/protocol.md section 14: claim for free slots, run handlers,
// heartbeat on its own timer, obey directives, ride out outages, shut down gracefully.
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { Orch8Client, DEFAULT_WAIT_MS } from "../client.js";
import { LEAN_HTTP } from "../transport.js";
import { Backoff, sleep } from "../backoff.js";
import { LeaseLostError } from "../errors.js";
import { isOutage, outageWait } from "../outage.js";
import type { PollLink, Telemetry, WorkerTelemetry } from "../telemetry.js";
import type { ClaimedTask, WorkerDirective } from "../types.js";
import { USER_AGENT } from "../version.js";
import { describeCause } from "./cause.js";
import { drain, SHUTDOWN_CALLS_MS } from "./drain.js";
import { OUTAGE_INITIAL_MS, OUTAGE_MAX_MS, TaskExecutor, type Handler } from "./executor.js";
import { HealthServer, type HealthAddress } from "./health.js";
import { trackHandlerTimers } from "./handler-timers.js";
import { HeartbeatLoop } from "./heartbeats.js";
import { Notifier } from "./notifier.js";
import { freeSlots, gatherSlots, pollThreshold, PollPlan } from "./poller.js";
import { registeredQueues, selectQueues, type QueueSelection } from "./queues.js";
import { registerUntilAnswered } from "./register.js";
import { installSignals } from "./signals.js";
import { taskFields, WorkerLog } from "./logs.js";
import { consoleAtWarn, emptyStats, type ErrorOperation, type Logger, type WorkerHooks, type WorkerStats } from "./stats.js";
import { TaskRun } from "./task-run.js";

/** Options of `new Worker(...)`; defaults are the protocol's (section 14). */
export interface WorkerOptions {
  /** Handlers by handler_name; the worker claims only these. */
  handlers: Record<string, Handler>;
  /** Default: `new Orch8Client()` (reads ORCH8_URL / ORCH8_API_KEY / ORCH8_TENANT). */
  client?: Orch8Client;
  /** Default: `<hostname>-<pid>-<8 hex digits>` (P-SDK-21). */
  workerId?: string;
  /** Most handlers running at once; a completion handed to the batcher frees its slot, at most `concurrency` of them awaiting an answer (P-SDK-3). Default 10. */
  concurrency?: number;
  /** Free slots a poll waits for while results are being reported (P-SDK-26). Default: half of min(concurrency, 100), rounded up; 1 turns the wait off. */
  pollThreshold?: number;
  /** Queue to claim from; default the `default` queue (P-QUEUE-1). Not with `queueNames`. */
  queueName?: string;
  /**
   * Several queues (1-10, distinct), claimed from in this order: a later queue only when the
   * earlier ones have nothing claimable (P-QUEUE-2, P-SDK-23). Not with `queueName`.
   */
  queueNames?: string[];
  /**
   * A weight 1-1000 for every name of `queueNames`: each claimed task's queue is drawn with
   * probability weight / sum among the queues that have work (P-QUEUE-3).
   */
  queueWeights?: Record<string, number>;
  /** Long-poll budget per poll. Default 30000. */
  waitMs?: number;
  /** Lease length asked for per claim and per heartbeat; default the server's. */
  leaseMs?: number;
  /** How long running handlers may finish after a shutdown begins (P-SDK-7). Default 25000. */
  gracePeriodMs?: number;
  /**
   * Worker heartbeat cadence, kept as given; default the server's `heartbeat_interval_ms`
   * (else 5000), shortened to a third of the shortest lease held (P-SDK-30).
   */
  heartbeatIntervalMs?: number;
  /** Free-form labels sent at registration. */
  labels?: Record<string, string>;
  /** Install SIGTERM/SIGINT (shutdown) and SIGTSTP/SIGCONT (quiet/resume) handlers. Default true. */
  handleSignals?: boolean;
  hooks?: WorkerHooks;
  /** Where warnings go, each naming its cause (P-SDK-22). Default: console, warn and error only. */
  logger?: Logger;
  /**
   * Spans and metrics of polls, handler runs and heartbeats (P-TEL-3, P-TEL-4), e.g.
   * `openTelemetry()` from "@orch8/sdk/otel". The default client gets it too. Default: none.
   */
  telemetry?: Telemetry;
  /**
   * Serve `GET /health` on 127.0.0.1 at this port while run() runs (P-TEL-5); 0 picks a
   * free port, read it from `worker.healthAddress`. Default: no endpoint.
   */
  healthPort?: number;
}

export const DEFAULT_CONCURRENCY = 10;
export const DEFAULT_GRACE_PERIOD_MS = 25_000;
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000;

type Phase = "new" | "running" | "stopping" | "stopped";

/** Polls, runs handlers and reports results until stopped. */
export class Worker {
  readonly client: Orch8Client;
  readonly workerId: string;
  readonly concurrency: number;
  private readonly pollThreshold: number;
  private readonly o: WorkerOptions;
  private readonly log: WorkerLog;
  private readonly handlerNames: string[];
  private readonly queues: QueueSelection;
  private readonly runs = new Map<string, TaskRun>(); // by runKey: one entry per claimed lease
  private readonly latestRun = new Map<string, TaskRun>(); // by task id: its newest run
  private handed = 0; // P-SDK-3: held runs whose completion is with the batcher
  private readonly counters = emptyStats();
  private readonly wake = new Notifier();
  private readonly executor: TaskExecutor;
  private readonly plan: PollPlan;
  private readonly tel: WorkerTelemetry | undefined;
  private health: HealthServer | undefined;
  private startedAt = Date.now(); // set again when run() begins (P-TEL-5)
  private lastPollAt: number | undefined;
  private lastHeartbeatAt: number | undefined;
  private readonly stopCtl = new AbortController(); // fires when shutdown begins
  private readonly graceCtl = new AbortController(); // fires to cut the grace period short
  private secondSignal: "SIGTERM" | "SIGINT" | undefined; // the signal that cut it (P-SDK-29)
  private pollCtl: AbortController | undefined;
  private heartbeats: HeartbeatLoop | undefined;
  private phase: Phase = "new";
  // P-SDK-18: two independent flags; claiming needs both clear.
  private localQuiet = false;
  private operatorQuiet = false;
  private lastDirective: WorkerDirective = "running";
  private finished: Promise<void> | undefined;

  constructor(options: WorkerOptions) {
    this.o = options;
    // Its own client sends over node:http to an http:// server (LeanHttp); a given one is used as is.
    this.client = options.client ?? new Orch8Client({ ...(options.telemetry ? { telemetry: options.telemetry } : {}), [LEAN_HTTP]: true });
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
    this.log = new WorkerLog(options.logger ?? consoleAtWarn, this.workerId, this.client.baseUrl);
    this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
    this.handlerNames = Object.keys(options.handlers);
    if (this.handlerNames.length === 0) throw new Error("Worker needs at least one handler");
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) throw new Error("concurrency must be an integer >= 1");
    this.pollThreshold = pollThreshold(this.concurrency, options.pollThreshold);
    // P-SDK-23: a bad queue option throws TypeError here, before any request.
    this.queues = selectQueues(options);
    if (options.healthPort !== undefined && !(Number.isInteger(options.healthPort) && options.healthPort >= 0 && options.healthPort <= 65535)) {
      throw new TypeError(`healthPort must be an integer port 0-65535 (0 picks a free one), got ${String(options.healthPort)}`);
    }
    this.tel = options.telemetry?.worker({ workerId: this.workerId, concurrency: this.concurrency });
    this.plan = new PollPlan({
      handlerNames: this.handlerNames, workerId: this.workerId, waitMs: options.waitMs ?? DEFAULT_WAIT_MS,
      queues: this.queues, leaseMs: options.leaseMs,
    });
    this.executor = new TaskExecutor({
      client: this.client,
      workerId: this.workerId,
      handlers: options.handlers,
      leaseMs: options.leaseMs,
      log: this.log,
      count: (outcome) => this.counters[`tasks_${outcome}`]++,
      handOver: (run) => {
        if (run.handed) return;
        run.handed = true;
        this.handed++;
        this.wake.notify();
      },
      hook: (name, ...args) => this.hook(name, ...args),
      error: (operation, error) => this.hook("onError", { operation, error }),
    });
  }

  /** Counters and the number of tasks held now (P-SDK-11). */
  stats(): WorkerStats {
    const c = this.counters;
    const done = c.tasks_completed + c.tasks_failed + c.tasks_lease_lost + c.tasks_cancelled + c.tasks_released;
    return { ...c, in_flight: c.tasks_claimed - done };
  }

  /** Where `GET /health` listens (P-TEL-5) once run() bound it; undefined without `healthPort`. */
  get healthAddress(): HealthAddress | undefined {
    return this.health?.address;
  }

  /** True while claiming is paused: local quiet (SIGTSTP, quiet()) or an operator's `quiet`. */
  get isQuiet(): boolean {
    return this.localQuiet || this.operatorQuiet;
  }

  /**
   * Registers, then claims and runs tasks until stop(), a signal or a `terminate`
   * directive; resolves after the graceful shutdown and deregistration (P-SDK-7).
   */
  run(): Promise<void> {
    this.finished ??= this.lifecycle();
    return this.finished;
  }

  /** Begins a graceful shutdown and resolves when it is over. Safe to call more than once. */
  stop(): Promise<void> {
    return this.beginStop("stop() called");
  }

  private beginStop(reason: string): Promise<void> {
    if (this.phase === "new") {
      this.phase = "stopped";
      this.finished ??= Promise.resolve();
    }
    if (this.phase === "running") {
      this.phase = "stopping";
      this.log.line("info", "stopping", `worker stopping: ${reason}`, { reason, grace_period_ms: this.gracePeriodMs });
      this.stopCtl.abort();
      this.pollCtl?.abort(); // P-SDK-7: the in-flight long-poll is aborted at once
      this.wake.notify();
    }
    return this.finished ?? Promise.resolve();
  }

  /** Local quiet: stops claiming; in-flight tasks go on (P-SDK-8). */
  quiet(): void {
    this.setQuiet("local", true);
  }

  /** Clears local quiet only; an operator's `quiet` stays in force (P-SDK-18). */
  resume(): void {
    this.setQuiet("local", false);
  }

  private setQuiet(who: "local" | "operator", on: boolean): void {
    const before = this.isQuiet;
    // P-SDK-31: a local change is logged (an operator's, as its directive, in obey).
    if (who === "local" && this.localQuiet !== on) {
      this.log.line("info", "local_quiet", on ? "claiming paused (local quiet)" : "claiming resumed (local)", { quiet: on });
    }
    if (who === "local") this.localQuiet = on;
    else this.operatorQuiet = on;
    if (this.isQuiet && !before) this.pollCtl?.abort(); // a poll already waiting would still claim
    this.wake.notify();
  }

  private async lifecycle(): Promise<void> {
    this.phase = "running";
    this.startedAt = Date.now();
    const removeSignals = this.o.handleSignals === false ? () => {} : installSignals({
      shutdown: (signal) => this.onSignal(signal),
      quiet: () => this.quiet(),
      resume: () => this.resume(),
    });
    const untrackTimers = trackHandlerTimers();
    const url = this.client.baseUrl;
    this.log.line("info", "start", `worker starting against ${url}`, {
      url, handlers: this.handlerNames, queues: registeredQueues(this.queues), concurrency: this.concurrency,
    });
    try {
      if (this.o.healthPort !== undefined) await this.serveHealth(this.o.healthPort);
      const interval = await this.register();
      if (interval === undefined) return; // stopped before the server ever answered
      this.heartbeats = new HeartbeatLoop({
        client: this.client,
        workerId: this.workerId,
        runs: () => this.runs.values(),
        state: () => (this.phase === "stopping" ? "terminating" : this.isQuiet ? "quiet" : "running"),
        leaseMs: this.o.leaseMs,
        lose: this.executor.lose,
        directive: (d) => this.obey(d),
        error: (err) => this.error("heartbeat", err, "worker heartbeat"),
        answered: (ok) => {
          if (ok) this.lastHeartbeatAt = Date.now();
          this.tel?.heartbeat(ok);
        },
      }, this.o.heartbeatIntervalMs ?? interval, this.o.heartbeatIntervalMs !== undefined);
      this.heartbeats.start();
      await this.pollLoop();
      await drain({
        workerId: this.workerId, gracePeriodMs: this.gracePeriodMs,
        runs: () => [...this.runs.values()], cut: this.graceCtl.signal, secondSignal: () => this.secondSignal,
        fail: (run, report, stop) => this.executor.fail(run, report, stop), log: this.log,
      });
      await this.heartbeats.stop();
      await this.client.deregisterWorker(this.workerId, { signal: AbortSignal.timeout(SHUTDOWN_CALLS_MS) })
        .catch((err) => this.error("deregister", err, "deregister"));
    } finally {
      this.phase = "stopped";
      removeSignals();
      // P-SDK-29: a handler deaf to its signal (already failed with shutdown) must not keep
      // the process alive through its own timers once run() returns.
      for (const run of this.runs.values()) if (!run.handlerReturned) run.timers.release();
      untrackTimers();
      await this.health?.close();
      this.log.line("info", "stopped", "worker stopped", { stats: this.stats() });
    }
  }

  private get gracePeriodMs(): number {
    return this.o.gracePeriodMs ?? DEFAULT_GRACE_PERIOD_MS;
  }

  /** P-SDK-7, P-SDK-17, P-SDK-29: each signal is logged; a second one ends the grace period now. */
  private onSignal(signal: "SIGTERM" | "SIGINT"): void {
    if (this.phase === "running") {
      const grace = this.gracePeriodMs;
      this.log.line("info", "signal", `received ${signal}: shutting down, running tasks get ${grace} ms`, { signal, grace_period_ms: grace });
      void this.beginStop(`received ${signal}`);
    } else if (this.phase === "stopping" && this.secondSignal === undefined) {
      this.secondSignal = signal;
      this.log.line("warn", "second_signal", `received a second signal ${signal}: ending the grace period now`, { signal });
      this.graceCtl.abort();
    } else {
      this.log.line("warn", "second_signal", `received ${signal} again: already ending the grace period`, { signal });
    }
  }

  /** P-TEL-5: binds the health endpoint before registering, so a probe sees the start-up. */
  private async serveHealth(port: number): Promise<void> {
    this.health = new HealthServer({
      workerId: this.workerId,
      stopping: () => this.phase !== "running",
      inFlight: () => this.runs.size,
      freeSlots: () => this.freeSlots(),
      startedAt: () => this.startedAt,
      lastPollAt: () => this.lastPollAt,
      lastHeartbeatAt: () => this.lastHeartbeatAt,
      heartbeatIntervalMs: () => this.heartbeats?.intervalMs ?? this.o.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS,
    });
    const bound = await this.health.listen(port);
    const addr = `http://${bound.address}:${bound.port}/health`;
    this.log.line("info", "health", `health endpoint on ${addr}`, { addr });
  }

  /** Registers the worker (P-SDK-21), riding out outages; resolves to the heartbeat interval. */
  private async register(): Promise<number | undefined> {
    const info = await registerUntilAnswered({
      client: this.client,
      registration: {
        worker_id: this.workerId,
        hostname: hostname(),
        pid: process.pid,
        handlers: this.handlerNames,
        queues: registeredQueues(this.queues), // P-SDK-21, P-SDK-23
        concurrency: this.concurrency,
        labels: this.o.labels ?? {},
        sdk: USER_AGENT,
      },
      stop: this.stopCtl.signal,
      log: this.log,
      error: (err, wait) => this.error("register", err, "registration", `retrying in ${wait} ms`, wait),
    });
    if (info === undefined) return undefined;
    const interval = info.heartbeat_interval_ms > 0 ? info.heartbeat_interval_ms : DEFAULT_HEARTBEAT_INTERVAL_MS;
    this.log.line("info", "registered", "worker registered", { url: this.client.baseUrl, heartbeat_interval_ms: this.o.heartbeatIntervalMs ?? interval });
    this.obey(info.directive);
    this.lastHeartbeatAt = Date.now(); // registration is the server's first news of us
    return interval;
  }

  /** P-SDK-3, P-SDK-13: long-poll for the free slots (at most 100), never with zero free. */
  private async pollLoop(): Promise<void> {
    const backoff = new Backoff(OUTAGE_INITIAL_MS, OUTAGE_MAX_MS);
    while (this.phase === "running") {
      const free = this.freeSlots();
      // P-SDK-26: slots of results being reported free up soon; wait for them, not poll for few.
      if (this.isQuiet || free <= 0 || gatherSlots(free, this.pollThreshold, this.runs.values())) {
        await this.wake.wait();
        continue;
      }
      const ctl = new AbortController();
      this.pollCtl = ctl;
      let tasks: ClaimedTask[];
      let pause = 0;
      let receivedAt = 0; // P-SDK-30: when the answer arrived, the start of each claimed lease
      const started = performance.now();
      const sentAt = Date.now();
      try {
        this.counters.polls++;
        const result = await this.client.pollTasks(this.plan.body(free), { signal: ctl.signal });
        receivedAt = Date.now();
        tasks = result.tasks;
        pause = result.next_poll_after_ms;
        this.lastPollAt = receivedAt;
        backoff.reset(); // P-SDK-9: the first success resets the outage backoff
      } catch (err) {
        if (ctl.signal.aborted) continue; // quiet or shutdown interrupted it on purpose
        this.counters.poll_errors++;
        this.tel?.polled(sentAt, undefined);
        const wait = isOutage(err) ? outageWait(err, backoff.next()) : backoff.next();
        this.error("poll", err, "poll", `backing off ${wait} ms`, wait);
        await sleep(wait, this.stopCtl.signal); // P-SDK-9, P-SDK-16
        continue;
      } finally {
        this.pollCtl = undefined;
      }
      this.hook("onPoll", { claimed: tasks.length, durationMs: performance.now() - started });
      const link = this.tel?.polled(sentAt, tasks); // P-TEL-3: the receive span
      for (const task of tasks) this.start(task, link, receivedAt);
      // P-SDK-30: a short lease must not wait out the heartbeat loop's current sleep.
      if (tasks.length > 0) this.heartbeats?.wake();
      if (pause > 0) await sleep(pause, this.stopCtl.signal);
    }
  }

  private start(task: ClaimedTask, link: PollLink, receivedAt: number): void {
    const run = new TaskRun(task, receivedAt); // P-SDK-30: its lease length, from the answer's arrival
    // A task reaped and claimed again while its first run goes: two runs, keyed by lease.
    // The new lease proves the old one gone (P-SDK-5); a result on its way is left to its answer.
    const stale = this.latestRun.get(task.id);
    const key = runKey(task);
    this.runs.set(key, run);
    this.latestRun.set(task.id, run);
    if (stale !== undefined && stale.phase === "running") {
      this.executor.lose(stale, "lease_lost", new LeaseLostError(`task ${task.id} was claimed again under lease ${task.lease.id}`, { status: 0, code: "lease_lost" }));
    }
    this.counters.tasks_claimed++;
    if (this.tel !== undefined) {
      run.tel = this.tel.taskStarted(task, run.claimedAt, link);
      this.tel.held(1, this.freeSlots());
    }
    run.done = this.executor.execute(run)
      .catch((err) => this.log.line("error", "internal_error", "task runner crashed", { operation: "run", ...taskFields(task) }, describeCause(err)))
      .finally(() => {
        run.phase = "done";
        if (run.handed) this.handed--;
        this.runs.delete(key);
        if (this.latestRun.get(task.id) === run) this.latestRun.delete(task.id);
        this.tel?.held(-1, this.freeSlots());
        this.wake.notify();
      });
  }

  private freeSlots(): number {
    return freeSlots(this.concurrency, this.runs.size, this.handed);
  }

  /** P-WORKER-3, P-SDK-18: act on a directive when it changes; it sets only the operator flag. */
  private obey(directive: WorkerDirective): void {
    if (directive === this.lastDirective) return;
    this.lastDirective = directive;
    if (directive !== "terminate" || this.phase === "running") this.log.line("info", "directive", `directive ${directive}`, { directive });
    if (directive === "quiet") this.setQuiet("operator", true);
    else if (directive === "running") this.setQuiet("operator", false);
    else if (directive === "terminate") void this.beginStop("terminate directive");
  }

  private hook<K extends keyof WorkerHooks>(name: K, ...args: Parameters<NonNullable<WorkerHooks[K]>>): void {
    const fn = this.o.hooks?.[name] as ((...a: unknown[]) => void) | undefined;
    if (!fn) return;
    try {
      fn(...args);
    } catch (error) {
      this.log.line("warn", "hook_error", `hook ${name} threw; ignored`, { hook: name }, describeCause(error));
    }
  }

  /** A call the worker made failed: log why (P-SDK-22, P-SDK-31) and tell onError (P-SDK-11). */
  private error(operation: ErrorOperation, error: unknown, subject: string, then = "", retryInMs?: number): void {
    this.log.callFailed(operation, error, subject, then, retryInMs === undefined ? {} : { retry_in_ms: retryInMs });
    this.hook("onError", { operation, error });
  }
}

/** One claimed attempt: the task id and its lease id. */
const runKey = (task: ClaimedTask): string => `${task.id} ${task.lease.id}`;
