// P-SDK-30: the worker heartbeat fits the shortest lease held (a third of it, never under
// 100 ms), and goes back to the server's interval once that task is done.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Orch8Client, Worker } from "../../src/index.js";
import { heartbeatPeriod } from "../../src/worker/heartbeats.js";
import { json, type Recorded } from "../helpers/mock-fetch.js";
import { batchAnswer, claimed, hangUntilAborted, item, routed, until, worker } from "../helpers/routed.js";

test("P-SDK-30: the period is min(interval, L / 3), never under 100 ms on account of a lease", () => {
  assert.equal(heartbeatPeriod(5000, []), 5000, "nothing held: the server's interval");
  assert.equal(heartbeatPeriod(5000, [{ leaseMs: undefined }]), 5000, "a lease of unknown length changes nothing");
  assert.equal(heartbeatPeriod(5000, [{ leaseMs: 60_000 }]), 5000, "a long lease: the interval");
  assert.equal(heartbeatPeriod(5000, [{ leaseMs: 60_000 }, { leaseMs: 1500 }]), 500, "the shortest lease held decides");
  assert.equal(heartbeatPeriod(5000, [{ leaseMs: 120 }]), 100, "floor 100 ms");
  assert.equal(heartbeatPeriod(5000, [{ leaseMs: 0 }]), 100, "an expired lease: still the floor");
  assert.equal(heartbeatPeriod(50, [{ leaseMs: 400 }]), 50, "a shorter interval stays as it is");
});

test("P-SDK-30: a lease of 1500 ms under a 5000 ms interval is heartbeated about every 500 ms, then the interval again", async () => {
  const leaseMs = 1500;
  let claimedAt = 0;
  let release!: () => void;
  const held = new Promise<void>((resolve) => { release = resolve; });
  const names = (c: Recorded) => (c.body as { active_task_ids: string[] }).active_task_ids.includes("t1");
  const m = routed({
    "POST /workers": () => json(200, { ...worker("w"), heartbeat_interval_ms: 5000 }),
    "POST /workers/w/heartbeat": (req) => {
      const ids = (req.body as { active_task_ids: string[] }).active_task_ids;
      const expires = new Date(Date.now() + leaseMs).toISOString();
      return json(200, { directive: "running", heartbeat_interval_ms: 5000, tasks: ids.map((id) => ({ task_id: id, lease_expires_at: expires, cancel_requested: false, lease_lost: false })) });
    },
    // The claim comes 600 ms into the loop's 5000 ms sleep: it must not wait that sleep out.
    "POST /workers/tasks/poll/batch": async (req, n) => {
      if (n !== 1) return hangUntilAborted(req, n);
      await new Promise((r) => setTimeout(r, 600));
      claimedAt = Date.now();
      return json(200, { tasks: [claimed("t1", leaseMs)], next_poll_after_ms: 0 });
    },
    "POST /workers/tasks/complete/batch": () => json(200, batchAnswer([item("t1")])),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false,
    handlers: { h: () => held.then(() => "ok") },
  });
  const run = w.run();
  try {
    const beats = () => m.calls.filter((c) => c.key === "POST /workers/w/heartbeat" && names(c));
    await until(() => beats().length >= 3, "3 worker heartbeats naming the task", 2500);
    const at = beats().map((c) => c.at);
    assert.ok(at[2]! - claimedAt <= 2000, `3 heartbeats within ~2 s of the claim, got ${at.map((t) => t - claimedAt).join(", ")} ms`);
    assert.ok(at[0]! - claimedAt <= 600, `the first within ~L/3 of the claim, got ${at[0]! - claimedAt} ms`);
    for (let i = 1; i < 3; i++) {
      const gap = at[i]! - at[i - 1]!;
      assert.ok(gap >= 400 && gap <= 700, `about 500 ms apart, got ${gap} ms`);
    }
    release();
    await until(() => w.stats().tasks_completed === 1, "the completion");
    const after = m.count("POST /workers/w/heartbeat");
    // The absence of a beat is the behaviour: 1 s with the 5000 ms interval back in force.
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(m.count("POST /workers/w/heartbeat"), after, "back to the server's 5000 ms once the task is done");
  } finally {
    release();
    await w.stop();
    await run;
  }
});

test("P-SDK-30: an explicit heartbeatIntervalMs is kept as given, even under a short lease", async () => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => { release = resolve; });
  const m = routed({
    "POST /workers": () => json(200, { ...worker("w"), heartbeat_interval_ms: 5000 }),
    "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 5000, tasks: [] }),
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1 ? json(200, { tasks: [claimed("t1", 300)], next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
    "POST /workers/tasks/complete/batch": () => json(200, batchAnswer([item("t1")])),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false,
    heartbeatIntervalMs: 60_000, handlers: { h: () => held.then(() => "ok") },
  });
  const run = w.run();
  try {
    await until(() => w.stats().in_flight === 1, "the claim");
    // A lease of 300 ms would be heartbeated every 100 ms; the worker's own 60 s stands.
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(m.count("POST /workers/w/heartbeat"), 0);
  } finally {
    release();
    await w.stop();
    await run;
  }
});
