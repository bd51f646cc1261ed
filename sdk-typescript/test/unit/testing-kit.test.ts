// The test kit (P-KIT-1..6): every case of conformance/kit-cases.json, plus TypeScript's own.
// Each handler of the table is written here under its name; a case naming a handler this
// file lacks fails, so the three SDKs' kits cannot drift apart.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { LeaseLostError, PermanentError, RetryableError, ShutdownError, TaskCancelledError, Yield, type TaskContext } from "../../src/index.js";
import { TestTask, type Outcome } from "../../src/testing/index.js";

interface Case {
  id: string;
  handler: string;
  task: Record<string, unknown>;
  trigger?: { fire: Fire; at_heartbeat: number; then?: Fire };
  expect: Record<string, unknown>;
}
type Fire = "cancel" | "lose_lease" | "shutdown";
type KitHandler = (task: TestTask, ctx: TaskContext) => unknown;

const CASES: Case[] = JSON.parse(readFileSync(new URL("../../../conformance/kit-cases.json", import.meta.url), "utf8")).cases;
const SIGNAL_WAIT_MS = 10_000; // a bound for a broken kit, never reached when the signal fires

// The table's options are snake_case (the wire's words); TestTask's are camelCase.
const camel = (key: string) => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
const p = (ctx: TaskContext) => ctx.params as Record<string, any>;

function waitAborted(signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), SIGNAL_WAIT_MS);
    signal.addEventListener("abort", () => { clearTimeout(timer); resolve(true); }, { once: true });
  });
}

function reasonOf(reason: unknown): string {
  if (reason instanceof TaskCancelledError) return "cancelled";
  if (reason instanceof LeaseLostError) return "lease_lost";
  if (reason instanceof ShutdownError) return "shutdown";
  return String(reason);
}

const HANDLERS: Record<string, KitHandler> = {
  reads_task: (_, ctx) => ({
    params: ctx.params, context: ctx.context, headers: ctx.headers, attempt: ctx.attempt, max_attempts: ctx.maxAttempts,
    checkpoint: ctx.checkpoint, task_id: ctx.id, handler_name: ctx.handlerName, queue_name: ctx.queueName, lease_id: ctx.leaseId,
  }),
  returns_params: (_, ctx) => ctx.params,
  returns_null: () => null,
  returns_non_json: () => NaN,
  returns_string_of: (_, ctx) => "x".repeat(p(ctx).bytes),
  returns_nested: (_, ctx) => {
    let value: unknown[] = [];
    for (let level = 1; level < p(ctx).depth; level++) value = [value];
    return value;
  },
  raises_retryable: (_, ctx) => {
    const { message, code, retry_after_ms: retryAfterMs, checkpoint } = p(ctx);
    throw new RetryableError(message, { code, retryAfterMs, checkpoint });
  },
  raises_permanent: (_, ctx) => {
    const { message, code, details, checkpoint } = p(ctx);
    throw new PermanentError(message, { code, details, checkpoint });
  },
  yields: (_, ctx) => { throw new Yield({ checkpoint: p(ctx).checkpoint, delayMs: p(ctx).delay_ms }); },
  raises_unhandled: (_, ctx) => { throw new Error(p(ctx).message); },
  raises_huge_message: (_, ctx) => { throw new PermanentError(p(ctx).char.repeat(p(ctx).repeat)); },
  raises_huge_details: (_, ctx) => { throw new PermanentError("details too big", { details: { blob: "x".repeat(p(ctx).bytes) } }); },
  heartbeats: async (_, ctx) => {
    for (const progress of p(ctx).progress) await ctx.heartbeat(progress);
    return { sent: p(ctx).progress.length };
  },
  saves_checkpoints: async (_, ctx) => {
    const start = (ctx.checkpoint?.page as number | undefined) ?? 0;
    const last = start + p(ctx).pages;
    for (let page = start + 1; page <= last; page++) await ctx.heartbeat(page, { page });
    return { first: start + 1, last };
  },
  waits_for_signal: async (task, ctx) => {
    try {
      await ctx.heartbeat("started");
    } catch (err) {
      if (err instanceof TaskCancelledError) task.logger.warn("heartbeat refused: task_cancelled");
      else if (err instanceof LeaseLostError) task.logger.warn("heartbeat refused: lease_lost");
      else throw err;
    }
    if (!(await waitAborted(ctx.signal))) return "never stopped";
    task.logger.info("stopped: %s", reasonOf(ctx.signal.reason));
    return "late result";
  },
};

function fire(task: TestTask, what: Fire): void {
  if (what === "cancel") task.cancel();
  else if (what === "lose_lease") task.loseLease();
  else task.shutdown();
}

async function runCase(c: Case): Promise<[TestTask, Outcome]> {
  const handler = HANDLERS[c.handler];
  assert.ok(handler, `no handler ${c.handler} in the TypeScript kit tests`);
  const trigger = c.trigger;
  let beats = 0;
  const pull = () => {
    if (trigger === undefined) return;
    fire(task, trigger.fire);
    if (trigger.then !== undefined) fire(task, trigger.then);
  };
  const options = Object.fromEntries(Object.entries(c.task).map(([k, v]) => [camel(k), v]));
  const task: TestTask = new TestTask({
    ...options,
    onHeartbeat: () => {
      beats++;
      if (beats === trigger?.at_heartbeat) pull();
    },
  });
  if (trigger?.at_heartbeat === 0) pull();
  return [task, await task.run((ctx) => handler(task, ctx))];
}

function check(c: Case, task: TestTask, outcome: Outcome): void {
  const want = c.expect;
  const got: Record<string, unknown> = { ...outcome, retry_after_ms: outcome.retryAfterMs, delay_ms: outcome.delayMs };
  for (const key of ["status", "output", "error", "code", "retryable", "retry_after_ms", "details", "checkpoint", "delay_ms"]) {
    if (key in want) assert.deepEqual(got[key], want[key], key);
  }
  if ("heartbeats" in want) assert.deepEqual(task.heartbeats, want.heartbeats);
  if ("checkpoints" in want) assert.deepEqual(task.checkpoints, want.checkpoints);
  if ("logs" in want) assert.deepEqual(task.logs, want.logs);
  if ("error_endswith" in want) assert.ok(outcome.error?.endsWith(want.error_endswith as string), outcome.error ?? "");
  if ("error_bytes" in want) assert.equal(Buffer.byteLength(outcome.error ?? ""), want.error_bytes);
  if ("details_keys" in want) assert.deepEqual(Object.keys(outcome.details ?? {}).sort(), want.details_keys);
  for (const [key, value] of Object.entries((want.details_subset ?? {}) as Record<string, unknown>)) {
    assert.deepEqual(outcome.details?.[key], value, key);
  }
}

for (const c of CASES) {
  test(`kit case ${c.id}`, async () => check(c, ...(await runCase(c))));
}

test("every handler of the table is here", () => {
  assert.deepEqual([...new Set(CASES.map((c) => c.handler))].sort(), Object.keys(HANDLERS).sort());
});

test("a broken expectation fails", async () => {
  const c = { ...CASES[0]!, expect: { ...CASES[0]!.expect, status: "failed" } };
  const [task, outcome] = await runCase(c);
  assert.throws(() => check(c, task, outcome));
});

test("a trigger fired from a timer once the handler waits", async () => {
  const task = new TestTask();
  const outcome = await task.run(async (ctx) => {
    setImmediate(() => task.loseLease());
    assert.ok(await waitAborted(ctx.signal));
    return "dropped";
  });
  assert.equal(outcome.status, "lease_lost");
  assert.equal(outcome.output, null);
});

test("the lease deadline is the run's start plus leaseMs; a task runs once; output is what JSON stores", async () => {
  const task = new TestTask({ leaseMs: 3_600_000 });
  const outcome = await task.run((ctx) => ({
    leaseLeftMs: ctx.leaseExpiresAt.getTime() - Date.now() > 3_500_000, at: new Date(0), skipped: undefined,
  }));
  assert.deepEqual(outcome.output, { leaseLeftMs: true, at: "1970-01-01T00:00:00.000Z" });
  await assert.rejects(task.run(() => null), /runs one handler once/);
});
