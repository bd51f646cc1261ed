// P-TEL-5: the worker health endpoint against the real server: off by default, 200 with its
// fields while the worker runs, 503 `stopping` once a shutdown begins, gone after run().
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Worker, type TaskContext, type WorkerHealth } from "../../src/index.js";
import { workerHealth, type HealthDeps } from "../../src/worker/health.js";
import { TestServer, waitFor } from "../helpers/server.js";
import { startWorker } from "../helpers/workers.js";

let server: TestServer;

before(async () => {
  server = await TestServer.start();
});
after(async () => server?.dispose());

async function probe(w: Worker): Promise<{ status: number; body: WorkerHealth }> {
  const a = w.healthAddress!;
  const res = await fetch(`http://${a.address}:${a.port}/health`);
  return { status: res.status, body: (await res.json()) as WorkerHealth };
}

test("P-TEL-5: 200 with worker_id, in_flight, free_slots and RFC 3339 times while running; 503 stopping once stop() begins", async () => {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let started = false;
  const w = startWorker(server, {
    healthPort: 0,
    concurrency: 4,
    queueName: "health_q",
    gracePeriodMs: 20_000,
    handlers: {
      health_hold: async (_ctx: TaskContext) => {
        started = true;
        await held;
        return null;
      },
    },
  });
  let stopping: Promise<void> | undefined;
  try {
    await waitFor(() => w.worker.healthAddress, "the health endpoint to listen");
    assert.equal(w.worker.healthAddress!.address, "127.0.0.1", "loopback only");
    const ok = await waitFor(async () => {
      const r = await probe(w.worker);
      return r.status === 200 && r.body.last_heartbeat_at !== null ? r : undefined;
    }, "a healthy answer");
    assert.equal(ok.body.status, "ok");
    assert.equal(ok.body.worker_id, w.worker.workerId);
    assert.equal(Number.isNaN(Date.parse(ok.body.last_heartbeat_at!)), false);
    assert.match(ok.body.last_heartbeat_at!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);

    await server.client().enqueue({ handler_name: "health_hold", queue_name: "health_q", params: {} });
    const busy = await waitFor(async () => {
      const r = await probe(w.worker);
      return started && r.body.in_flight === 1 && r.body.last_poll_at !== null ? r : undefined;
    }, "the task to be in flight and the poll recorded");
    assert.equal(busy.status, 200);
    assert.deepEqual(Object.keys(busy.body).sort(), ["free_slots", "in_flight", "last_heartbeat_at", "last_poll_at", "status", "worker_id"]);
    assert.equal(busy.body.free_slots, 3);

    stopping = w.worker.stop(); // the held task keeps the worker draining
    const down = await probe(w.worker);
    assert.equal(down.status, 503);
    assert.equal(down.body.status, "stopping");
    assert.equal(down.body.in_flight, 1);
  } finally {
    release();
    await stopping;
    await w.close();
  }
  const addr = w.worker.healthAddress!;
  await assert.rejects(fetch(`http://${addr.address}:${addr.port}/health`), "the endpoint closes with run()");
});

test("P-TEL-5: off by default", async () => {
  const w = startWorker(server, { handlers: { health_none: () => null } });
  try {
    await waitFor(() => w.calls.some((c) => c.path === "/workers/tasks/poll/batch"), "the first poll");
    assert.equal(w.worker.healthAddress, undefined);
  } finally {
    await w.close();
  }
});

test("P-TEL-5: unhealthy when neither a poll nor a heartbeat succeeded within 3 heartbeat intervals", () => {
  const now = 1_700_000_000_000;
  const deps = (poll?: number, beat?: number, stopping = false): HealthDeps => ({
    workerId: "w", stopping: () => stopping, inFlight: () => 2, freeSlots: () => 8, startedAt: () => now - 60_000,
    lastPollAt: () => poll, lastHeartbeatAt: () => beat, heartbeatIntervalMs: () => 1000,
  });
  assert.equal(workerHealth(deps(undefined, undefined), now).status, "unhealthy", "nothing succeeded since a start long ago");
  assert.equal(workerHealth(deps(now - 3000, undefined), now).status, "ok");
  assert.equal(workerHealth(deps(now - 3001, undefined), now).status, "unhealthy");
  assert.equal(workerHealth(deps(now - 60_000, now - 2000), now).status, "ok", "a recent heartbeat is enough");
  assert.equal(workerHealth(deps(now, now, true), now).status, "stopping");
  assert.deepEqual(workerHealth(deps(now - 1000, undefined), now), {
    status: "ok", worker_id: "w", in_flight: 2, free_slots: 8, last_poll_at: new Date(now - 1000).toISOString(), last_heartbeat_at: null,
  });
  assert.throws(() => new Worker({ handlers: { h: () => 1 }, healthPort: -1 }), /healthPort/);
});
