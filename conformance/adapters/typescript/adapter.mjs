// Conformance adapter for the TypeScript SDK (@orch8/sdk, built into sdk-typescript/dist).
// Builds a Worker from the ORCH8_* environment (conformance/README.md, "Adapter contract"),
// registers the fixed handler table and prints JSON-line events on stdout.
import { writeSync } from "node:fs";
import {
  Worker,
  RetryableError,
  PermanentError,
  LeaseLostError,
  TaskCancelledError,
  Yield,
} from "../../../sdk-typescript/dist/index.js";
// A namespace import: the worker keeps working with an SDK build that predates waitInstance.
import * as sdk from "../../../sdk-typescript/dist/index.js";
import * as tracing from "./tracing.mjs";

const env = process.env;
// Unset: the SDK's default id (P-SDK-21); replaced by the worker's own once it is built.
let WORKER_ID = env.ORCH8_WORKER_ID;
const num = (key) => (env[key] ? Number(env[key]) : undefined);

// Synchronous writes: a crash (process.exit) must not lose buffered events.
function emit(event, ctx, fields = {}) {
  const record = { event, t: Date.now(), worker_id: WORKER_ID };
  if (ctx) Object.assign(record, { task_id: ctx.id, handler: ctx.handlerName, attempt: ctx.attempt });
  writeSync(1, JSON.stringify({ ...record, ...fields }) + "\n");
}

/** P-SDK-31: each line at info and above goes to stderr and is reported as a `log` event. */
function logAt(level, write) {
  return (message, fields = {}, ...rest) => {
    write(message, fields, ...rest);
    emit("log", undefined, { level, message, fields });
  };
}
const logger = {
  debug: () => {},
  info: logAt("info", console.error),
  warn: logAt("warning", console.error),
  error: logAt("error", console.error),
};

const output = (ctx, extra = {}) => ({ handler: ctx.handlerName, attempt: ctx.attempt, worker_id: WORKER_ID, ...extra });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const reported = new WeakSet();

/** Wait up to `ms` unless the cancellation signal fires; report it once. Resolves true if cancelled. */
function pause(ctx, ms) {
  const report = () => {
    if (!reported.has(ctx)) {
      reported.add(ctx);
      emit("cancelled", ctx, { reason: ctx.signal.reason?.code ?? ctx.signal.reason?.name ?? "cancelled" });
    }
    return true;
  };
  if (ctx.signal.aborted) return Promise.resolve(report());
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(report());
    };
    const timer = setTimeout(() => {
      ctx.signal.removeEventListener("abort", onAbort);
      resolve(false);
    }, ms);
    ctx.signal.addEventListener("abort", onAbort, { once: true });
  });
}

const handlers = {
  async echo(ctx) {
    await pause(ctx, ctx.params.sleep_ms ?? 0);
    return output(ctx, { echo: ctx.params });
  },
  // A workflow step: its params (references resolved) and its context (P-WF-4).
  async echo_context(ctx) {
    await pause(ctx, ctx.params.sleep_ms ?? 0);
    return output(ctx, { echo: ctx.params, context: ctx.context });
  },
  async fail_once(ctx) {
    if (ctx.attempt === 1) throw new RetryableError("fail_once: the first attempt fails");
    return output(ctx);
  },
  async fail_always(ctx) {
    const typed = { code: ctx.params.code, details: ctx.params.details }; // P-SDK-20
    if (ctx.params.permanent) throw new PermanentError("fail_always: permanent failure", typed);
    throw new RetryableError("fail_always: retryable failure", typed);
  },
  async unhandled() {
    throw new Error("unhandled: an exception the handler did not classify");
  },
  async slow(ctx) {
    const duration = ctx.params.duration_ms ?? 2000;
    const every = ctx.params.heartbeat_ms ?? 200;
    const start = Date.now();
    for (let elapsed = 0; elapsed < duration; elapsed = Date.now() - start) {
      try {
        await ctx.heartbeat({ elapsed_ms: elapsed });
      } catch {
        // lease lost or cancelled: the signal has fired, pause() reports it
      }
      if (await pause(ctx, Math.min(every, duration - elapsed))) return output(ctx, { cancelled: true });
    }
    return output(ctx, { slow_ms: duration });
  },
  async stall(ctx) {
    if (ctx.attempt <= (ctx.params.stall_attempts ?? 1)) {
      await sleep(ctx.params.stall_ms ?? 5000); // deaf to cancellation on purpose
      return output(ctx, { stalled: true });
    }
    await pause(ctx, ctx.params.after_ms ?? 0);
    return output(ctx, { stalled: false });
  },
  async crash(ctx) {
    if (ctx.attempt <= (ctx.params.crash_attempts ?? 1)) process.exit(3);
    return output(ctx);
  },
  async wait_for_cancel(ctx) {
    return output(ctx, { cancelled: await pause(ctx, ctx.params.timeout_ms ?? 30000) });
  },
  async checkpoint(ctx) {
    if (ctx.checkpoint === null) {
      await ctx.heartbeat(undefined, { step: 1, saved_by_attempt: ctx.attempt });
      throw new RetryableError("checkpoint: saved one, failing so the next attempt gets it");
    }
    return output(ctx, { checkpoint: ctx.checkpoint });
  },
  async retry_after(ctx) {
    if (ctx.attempt === 1) throw new RetryableError("retry_after", { retryAfterMs: ctx.params.retry_after_ms ?? 1000 });
    return output(ctx);
  },
  // An output strict JSON cannot encode (P-SDK-15): NaN, Infinity or a cycle.
  async non_json_output(ctx) {
    const kind = ctx.params.kind ?? "nan";
    if (kind === "cycle") {
      const loop = { handler: ctx.handlerName };
      loop.self = loop;
      return loop;
    }
    return output(ctx, { value: kind === "infinity" ? Infinity : NaN });
  },
  async huge_output(ctx) {
    await pause(ctx, ctx.params.sleep_ms ?? 0);
    return output(ctx, { echo: ctx.params, blob: "x".repeat(ctx.params.bytes ?? 200000) });
  },
  async retryable_with_checkpoint(ctx) {
    if (ctx.checkpoint === null) {
      const checkpoint = { step: 1, saved_by_attempt: ctx.attempt };
      throw new RetryableError("retryable_with_checkpoint", { code: "checkpointed", details: { step: 1 }, checkpoint });
    }
    return output(ctx, { checkpoint: ctx.checkpoint });
  },
  // Yields (P-SDK-32) until the checkpoint counts `yields` of them, then returns it.
  async yield_checkpoint(ctx) {
    const done = ctx.checkpoint?.yields ?? 0;
    if (done < (ctx.params.yields ?? 2)) throw new Yield({ checkpoint: { yields: done + 1, saved_by_attempt: ctx.attempt } });
    return output(ctx, { checkpoint: ctx.checkpoint });
  },
  // Deaf to the signal; only its own heartbeat can learn of a cancel or a lost lease (P-SDK-19).
  async heartbeat_after_cancel(ctx) {
    if (ctx.attempt > (ctx.params.lose_attempts ?? 1)) return output(ctx, { heartbeat_errors: 0 });
    const deadline = Date.now() + (ctx.params.timeout_ms ?? 10000);
    while (Date.now() < deadline) {
      await sleep(ctx.params.every_ms ?? 200);
      try {
        await ctx.heartbeat({ alive: true });
      } catch (err) {
        if (err instanceof LeaseLostError || err instanceof TaskCancelledError) {
          const error = err instanceof TaskCancelledError ? "task_cancelled" : "lease_lost";
          emit("heartbeat_error", ctx, { error, signal_fired: ctx.signal.aborted });
          await pause(ctx, 0);
        }
        throw err;
      }
    }
    return output(ctx, { timed_out: true });
  },
  // A value nested `depth` objects deep: depth 1 is {"d": 0} (P-ERR-5, P-SDK-15).
  async deep_output(ctx) {
    await pause(ctx, ctx.params.sleep_ms ?? 0);
    let value = 0;
    for (let i = 0; i < (ctx.params.depth ?? 1); i++) value = { d: value };
    return value;
  },
  // A failure too large to store as thrown (P-SDK-27): the SDK bounds it and it still lands.
  async huge_error(ctx) {
    const p = ctx.params;
    const message = p.message_bytes === undefined ? "huge error" : "x".repeat(p.message_bytes);
    const typed = {};
    if (p.details_bytes !== undefined) typed.details = { blob: "y".repeat(p.details_bytes) };
    if (p.checkpoint_bytes !== undefined) typed.checkpoint = { blob: "z".repeat(p.checkpoint_bytes) };
    throw p.retryable ? new RetryableError(message, typed) : new PermanentError(message, typed);
  },
  // The trace context as received (P-TEL-1) and the current span's ids (P-TEL-3).
  async echo_trace(ctx) {
    const [trace_id, parent_span_id] = tracing.currentSpanIds();
    const headers = ctx.headers ?? {};
    return output(ctx, { traceparent: headers.traceparent ?? null, tracestate: headers.tracestate ?? null, trace_id, parent_span_id });
  },
};
for (let i = 1; i <= Number(env.ORCH8_EXTRA_HANDLERS || 0); i++) handlers[`extra_${i}`] = handlers.echo;
handlers.video_renderer = handlers.echo_context; // seed 000's step JSON, verbatim (workflow-block-step)

function observed(fn) {
  return async (ctx) => {
    emit("start", ctx);
    let result = "error";
    try {
      const value = await fn(ctx);
      result = "ok";
      return value;
    } finally {
      emit("end", ctx, { result });
    }
  };
}

const names = (env.ORCH8_HANDLERS || "").split(",").filter(Boolean);
for (const name of Object.keys(handlers)) if (names.length && name.startsWith("extra_")) names.push(name);
const table = {};
for (const name of names.length ? names : Object.keys(handlers)) table[name] = observed(handlers[name]);

// Every hook becomes a `hook` event; outcomes are followed by a `stats` event (P-SDK-11).
let worker;
const stats = () => emit("stats", null, { stats: worker.stats() });
const hook = (name, fields) => emit("hook", null, { hook: name, ...fields });
const hooks = {
  onPoll: (e) => hook("poll", { claimed: e.claimed, duration_ms: e.durationMs }),
  onTaskStart: (e) => hook("task_start", { task_id: e.task.id }),
  onTaskComplete: (e) => (hook("task_complete", { task_id: e.task.id, duration_ms: e.durationMs }), stats()),
  onTaskFail: (e) => (
    hook("task_fail", { task_id: e.task.id, code: e.code, retryable: e.retryable, duration_ms: e.durationMs }), stats()
  ),
  onTaskAbandoned: (e) => (hook("task_abandoned", { task_id: e.task.id, reason: e.reason }), stats()),
  onError: (e) => hook("error", { operation: e.operation, error: String(e.error) }),
};
// ORCH8_HOOKS_RAISE: every hook throws after reporting (P-SDK-11: logged and ignored).
if (env.ORCH8_HOOKS_RAISE) {
  for (const [name, fn] of Object.entries(hooks)) {
    hooks[name] = (e) => {
      fn(e);
      throw new Error(`conformance: ${name} throws on purpose`);
    };
  }
}

// ORCH8_WAIT_INSTANCE: the client's waitInstance on that id (P-SDK-25), alongside the worker.
// Reports `waited` (the final status) or `wait_timeout` (the last status seen).
function waitInstance() {
  const id = env.ORCH8_WAIT_INSTANCE;
  if (!id) return;
  const timeoutMs = num("ORCH8_WAIT_TIMEOUT_MS");
  Promise.resolve()
    .then(() => new sdk.Orch8Client().waitInstance(id, timeoutMs === undefined ? {} : { timeoutMs }))
    .then((final) => emit("waited", null, { instance_id: id, status: final.status }))
    .catch((err) =>
      sdk.WaitTimeoutError && err instanceof sdk.WaitTimeoutError
        ? emit("wait_timeout", null, { instance_id: id, last_status: err.lastState?.status ?? null })
        : emit("wait_error", null, { instance_id: id, error: String(err) }),
    );
}

// ORCH8_QUEUE_WEIGHTS / ORCH8_LABELS: "k=v,k=v" into an object; unset is undefined.
const pairs = (raw) =>
  raw ? Object.fromEntries(raw.split(",").filter(Boolean).map((item) => [item.slice(0, item.indexOf("=")), item.slice(item.indexOf("=") + 1)])) : undefined;
const weights = pairs(env.ORCH8_QUEUE_WEIGHTS);
const { telemetry, provider } = await tracing.build();
try {
  worker = new Worker({
    handlers: table,
    hooks,
    logger,
    workerId: WORKER_ID,
    concurrency: num("ORCH8_CONCURRENCY"),
    queueName: env.ORCH8_QUEUE || undefined,
    queueNames: env.ORCH8_QUEUE_NAMES ? env.ORCH8_QUEUE_NAMES.split(",") : undefined,
    queueWeights: weights && Object.fromEntries(Object.entries(weights).map(([k, v]) => [k, Number(v)])),
    labels: pairs(env.ORCH8_LABELS),
    gracePeriodMs: num("ORCH8_GRACE_PERIOD_MS"),
    heartbeatIntervalMs: num("ORCH8_HEARTBEAT_INTERVAL_MS"),
    waitMs: num("ORCH8_WAIT_MS"),
    leaseMs: num("ORCH8_LEASE_MS"),
    telemetry, // P-TEL-3 (ORCH8_TELEMETRY); undefined: no telemetry
  });
} catch (err) {
  // P-SDK-23: the SDK refuses the options (TypeError) before any request.
  console.error(`orch8 Worker refused its options: ${err}`);
  process.exit(1);
}
WORKER_ID = worker.workerId;
emit("ready", null, { sdk: "typescript", tracing: telemetry !== undefined, logs: true });
waitInstance();
try {
  await worker.run();
} catch (err) {
  // P-SDK-28: a registration refused for good (not an Orch8 server) ends run() at once.
  console.error(`orch8 worker stopped: ${err?.message ?? err}`);
  process.exit(1);
}
emit("stopped", null, { stats: worker.stats() });
await provider?.shutdown(); // exports the spans still batched (the end-to-end trace test)
// run() has returned and holds nothing (P-SDK-29: even a deaf handler's timer is unref'd),
// but a waitInstance still long-polling would: the adapter contract says exit now.
process.exit(0);
