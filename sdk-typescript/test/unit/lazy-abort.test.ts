// A run's two abort signals (the handler's, and the one that stops re-sending a result) are
// made on first read: they must behave as plain AbortControllers whatever the order of
// abort() and the first read.
import { test } from "node:test";
import assert from "node:assert/strict";
import { LazyAbort, TaskRun } from "../../src/worker/task-run.js";
import { TaskContext } from "../../src/worker/context.js";
import type { ClaimedTask } from "../../src/types.js";
import { claimed } from "../helpers/routed.js";

const task = (id: string): ClaimedTask => ({ ...claimed(id, 60_000), ready_at: new Date().toISOString() });

test("a signal read before abort() fires with the reason", () => {
  const a = new LazyAbort();
  const signal = a.signal;
  let heard: unknown;
  signal.addEventListener("abort", () => { heard = signal.reason; });
  assert.equal(signal.aborted, false);
  assert.equal(a.aborted, false);
  const why = new Error("lease lost");
  a.abort(why);
  assert.equal(signal.aborted, true);
  assert.equal(heard, why);
  assert.equal(a.aborted, true);
  assert.equal(a.signal, signal, "one signal, whatever the reads");
});

test("a signal first read after abort() is already aborted with the first reason", () => {
  const a = new LazyAbort();
  const first = new Error("cancelled");
  a.abort(first);
  a.abort(new Error("later"));
  assert.equal(a.aborted, true);
  assert.equal(a.signal.aborted, true);
  assert.equal(a.signal.reason, first);
});

test("abort() without a reason gives the platform's AbortError, as AbortController does", () => {
  const a = new LazyAbort();
  a.abort();
  assert.equal(a.signal.reason instanceof DOMException, true);
  assert.equal((a.signal.reason as DOMException).name, "AbortError");
});

test("a handler's ctx.signal and ctx.cancelled follow the run's loss, read before or after", () => {
  const early = new TaskRun(task("t1"));
  const ctxEarly = new TaskContext(early, { heartbeatTask: async () => { throw new Error("unused"); } }, "w", () => {});
  const signal = ctxEarly.signal;
  const late = new TaskRun(task("t2"));
  const ctxLate = new TaskContext(late, { heartbeatTask: async () => { throw new Error("unused"); } }, "w", () => {});
  const why = new Error("lease lost");
  assert.equal(early.settle("lease_lost", why), true);
  assert.equal(late.settle("cancelled", why), true);
  assert.equal(signal.aborted, true);
  assert.equal(ctxEarly.cancelled, true);
  assert.equal(ctxLate.cancelled, true);
  assert.equal(ctxLate.signal.aborted, true);
  assert.equal(ctxLate.signal.reason, why);
  assert.equal(late.stopDelivery.signal.aborted, true);
});
