// What docs/protocol.md section 15 pins so the three SDKs agree (issue 18): spans of several
// queues (P-TEL-1, P-TEL-3), the receive span's attributes, the no_handler process span and
// duration point, and health before the first success (P-TEL-5).
import { test } from "node:test";
import assert from "node:assert/strict";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { Orch8Client, Worker } from "../../src/index.js";
import { workerHealth, type HealthDeps } from "../../src/worker/health.js";
import { json } from "../helpers/mock-fetch.js";
import { testOtel, total } from "../helpers/otel.js";
import { claimed, hangUntilAborted, routed, until, worker } from "../helpers/routed.js";

const inQueue = (task: ReturnType<typeof claimed>, queue: string) => ({ ...task, queue_name: queue });

test("P-TEL-1: a batch to several queues is a span named `send` alone, without messaging.destination.name", async () => {
  const otel = testOtel();
  const task = (id: string, queue: string) => ({ ...claimed(id, 60_000), queue_name: queue, status: "pending" });
  const fetch = async () => json(201, { tasks: [task("t1", "a"), task("t2", "b")] });
  const client = new Orch8Client({ baseUrl: "http://h:1", fetch, telemetry: otel.telemetry });
  try {
    await client.enqueueBatch([{ handler_name: "h", queue_name: "a" }, { handler_name: "h", queue_name: "b" }]);
    await client.enqueueBatch([{ handler_name: "h", queue_name: "a" }, { handler_name: "h", queue_name: "a" }]);
    const [mixed, one] = otel.spans();
    assert.equal(mixed?.name, "send");
    assert.equal(mixed?.kind, SpanKind.PRODUCER);
    assert.equal("messaging.destination.name" in mixed!.attributes, false, JSON.stringify(mixed!.attributes));
    assert.equal(mixed?.attributes["messaging.batch.message_count"], 2);
    assert.equal(mixed?.attributes["messaging.operation.type"], "send");
    assert.equal(one?.name, "send a", "one queue keeps its name");
    assert.equal(one?.attributes["messaging.destination.name"], "a");
  } finally {
    await otel.shutdown();
  }
});

test("P-TEL-3: a poll of several queues is a span named `receive` alone with the pinned attributes; no_handler gets its process span and duration point", async () => {
  const otel = testOtel();
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 50, tasks: [] }),
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1
      ? json(200, { tasks: [inQueue(claimed("t1", 60_000, "resize"), "a"), inQueue(claimed("t2", 60_000, "resize"), "b")], next_poll_after_ms: 0 })
      : n === 2 ? json(200, { tasks: [inQueue(claimed("t3", 60_000, "resize"), "a")], next_poll_after_ms: 0 })
        : hangUntilAborted(req, n)),
    "POST /workers/tasks/t1/fail": () => json(200, { task_id: "t1", status: "failed", attempt: 1, attempts_left: 0, next_attempt_at: null }),
    "POST /workers/tasks/t2/fail": () => json(200, { task_id: "t2", status: "failed", attempt: 1, attempts_left: 0, next_attempt_at: null }),
    "POST /workers/tasks/t3/fail": () => json(200, { task_id: "t3", status: "failed", attempt: 1, attempts_left: 0, next_attempt_at: null }),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false,
    queueNames: ["a", "b"], telemetry: otel.telemetry, handlers: { h: () => null },
  });
  const run = w.run();
  try {
    await until(() => w.stats().tasks_failed === 3 && w.stats().in_flight === 0, "three no_handler failures");
    const receives = otel.spans().filter((s) => s.name.startsWith("receive"));
    assert.deepEqual(receives.map((s) => s.name), ["receive", "receive a"]);
    assert.deepEqual(receives[0]!.attributes, {
      "messaging.system": "orch8", "messaging.operation.type": "receive", "messaging.batch.message_count": 2, "orch8.worker.id": "w",
    }, "several queues: no messaging.destination.name");
    assert.equal(receives[0]!.kind, SpanKind.CLIENT);
    assert.deepEqual(receives[1]!.attributes, {
      "messaging.system": "orch8", "messaging.operation.type": "receive", "messaging.destination.name": "a",
      "messaging.batch.message_count": 1, "orch8.worker.id": "w",
    });

    // P-TEL-3, P-TEL-4: no handler ran, yet each task has its process span and duration point.
    const procs = otel.spans().filter((s) => s.name.startsWith("process"));
    assert.deepEqual(procs.map((s) => s.name).sort(), ["process a", "process a", "process b"]);
    for (const p of procs) {
      assert.equal(p.attributes["orch8.outcome"], "failed");
      assert.equal(p.attributes["error.type"], "no_handler");
      assert.equal(p.status.code, SpanStatusCode.ERROR);
    }
    const metrics = await otel.metrics();
    const a = { "messaging.destination.name": "a", "orch8.handler": "resize" };
    assert.equal(total(metrics.get("orch8.worker.task.duration"), { ...a, "orch8.outcome": "failed" }), 2);
    assert.equal(total(metrics.get("orch8.worker.task.duration"), { "messaging.destination.name": "b", "orch8.outcome": "failed" }), 1);
    assert.equal(total(metrics.get("orch8.worker.tasks.failed"), { ...a, "error.type": "no_handler" }), 2);
  } finally {
    await w.stop();
    await run;
    await otel.shutdown();
  }
});

test("P-TEL-5: before the first successful poll or heartbeat the worker's start counts (healthy for 3 intervals)", () => {
  const now = 1_700_000_000_000;
  const deps = (started: number, poll?: number, beat?: number): HealthDeps => ({
    workerId: "w", stopping: () => false, inFlight: () => 0, freeSlots: () => 1, startedAt: () => started,
    lastPollAt: () => poll, lastHeartbeatAt: () => beat, heartbeatIntervalMs: () => 1000,
  });
  assert.equal(workerHealth(deps(now), now).status, "ok", "a new worker is healthy");
  assert.equal(workerHealth(deps(now - 3000), now).status, "ok");
  assert.equal(workerHealth(deps(now - 3001), now).status, "unhealthy", "nothing succeeded within 3 intervals of the start");
  assert.equal(workerHealth(deps(now - 60_000, now - 2000), now).status, "ok");
  assert.equal(workerHealth(deps(now - 60_000, now - 3001, now - 4000), now).status, "unhealthy", "successes older than 3 intervals");
  const body = workerHealth(deps(now), now);
  assert.equal(body.last_poll_at, null, "the start is no success: the times stay null");
  assert.equal(body.last_heartbeat_at, null);
});

test("P-TEL-5: a new worker answers 200 before registration succeeds", async () => {
  let registered!: () => void;
  const held = new Promise<void>((r) => (registered = r));
  const m = routed({
    "POST /workers": async (req) => {
      // Registration hangs: no poll nor heartbeat has succeeded yet.
      await Promise.race([held, new Promise((r) => req.signal.addEventListener("abort", r))]);
      throw new Error("registration never answers in this test");
    },
  });
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false,
    healthPort: 0, heartbeatIntervalMs: 60_000, handlers: { h: () => null },
  });
  const run = w.run();
  try {
    await until(() => w.healthAddress !== undefined && m.count("POST /workers") === 1, "the health endpoint and the registration call");
    const a = w.healthAddress!;
    const res = await fetch(`http://${a.address}:${a.port}/health`);
    const body = (await res.json()) as { status: string; last_heartbeat_at: string | null };
    assert.equal(res.status, 200);
    assert.equal(body.status, "ok");
    assert.equal(body.last_heartbeat_at, null);
  } finally {
    registered();
    await w.stop();
    await run;
  }
});
