// A task reaped and claimed again by the same worker while its first run still goes
// (P-SDK-5, P-SDK-11): two runs, each keyed by its lease, each holding its own slot.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Orch8Client, Worker } from "../../src/index.js";
import { json } from "../helpers/mock-fetch.js";
import { batchAnswer, claimed, hangUntilAborted, item, routed, until, worker } from "../helpers/routed.js";

test("P-SDK-5, P-SDK-11: a task claimed again under a new lease gives up its first run; both leave, no slot leaks", async () => {
  const first = claimed("t1", 60_000);
  const again = { ...claimed("t1", 60_000), lease: { ...first.lease, id: "lease_t1_again" } };
  let secondClaimed = false;
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 50, tasks: [] }),
    "POST /workers/tasks/poll/batch": (req, n) => {
      if (n === 1) return json(200, { tasks: [first], next_poll_after_ms: 0 });
      if (n === 2) {
        secondClaimed = true;
        return json(200, { tasks: [again], next_poll_after_ms: 0 });
      }
      return hangUntilAborted(req, n);
    },
    "POST /workers/tasks/complete/batch": (req) => json(200, batchAnswer((req.body as { items: Array<{ task_id: string }> }).items.map((i) => item(i.task_id)))),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  let releaseFirst!: () => void;
  const firstHeld = new Promise<void>((r) => (releaseFirst = r));
  let runs = 0;
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false, concurrency: 2,
    handlers: {
      // The first run ignores its signal, as a slow handler may.
      h: async () => (++runs === 1 ? firstHeld.then(() => "stale") : "fresh"),
    },
  });
  const run = w.run();
  try {
    await until(() => secondClaimed && w.stats().tasks_completed === 1, "the second run to complete");
    await until(() => m.count("POST /workers/tasks/poll/batch") >= 3, "the poll after the second run");
    const third = m.calls.filter((c) => c.key === "POST /workers/tasks/poll/batch")[2]!;
    assert.equal((third.body as { batch_size: number }).batch_size, 1, "the first run still holds its slot");
    releaseFirst();
    await until(() => w.stats().in_flight === 0 && w.stats().tasks_lease_lost === 1, "the first run to leave");
    const s = w.stats();
    assert.deepEqual([s.tasks_claimed, s.tasks_completed, s.tasks_lease_lost], [2, 1, 1]);
    const leases = m.calls.filter((c) => c.key === "POST /workers/tasks/complete/batch")
      .flatMap((c) => (c.body as { items: Array<{ lease_id: string }> }).items.map((i) => i.lease_id));
    assert.deepEqual(leases, ["lease_t1_again"], "the first run's stale result is never sent");
  } finally {
    releaseFirst();
    await w.stop();
    await run;
  }
});
