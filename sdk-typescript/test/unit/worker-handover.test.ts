// P-SDK-3: a completion handed to the batcher frees its slot, so the next poll overlaps
// with reporting; completions awaiting an answer are capped at `concurrency`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Orch8Client, Worker } from "../../src/index.js";
import { freeSlots } from "../../src/worker/poller.js";
import { json, type Recorded } from "../helpers/mock-fetch.js";
import { batchAnswer, claimed, hangUntilAborted, item, routed, until, worker } from "../helpers/routed.js";

/** Ten claimable tasks; complete batches are answered only once `open()` was called. */
function heldCompletions() {
  const pending = Array.from({ length: 10 }, (_, i) => `t${i}`);
  let open!: () => void;
  const opened = new Promise<void>((r) => { open = r; });
  const completed: string[] = [];
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 1000, tasks: [] }),
    "POST /workers/tasks/poll/batch": (req: Recorded, n: number) => {
      const take = pending.splice(0, (req.body as { batch_size: number }).batch_size);
      return take.length ? json(200, { tasks: take.map((id) => claimed(id, 60_000)), next_poll_after_ms: 0 }) : hangUntilAborted(req, n);
    },
    "POST /workers/tasks/complete/batch": async (req) => {
      await opened;
      const ids = (req.body as { items: Array<{ task_id: string }> }).items.map((i) => i.task_id);
      completed.push(...ids);
      return json(200, batchAnswer(ids.map((id) => item(id))));
    },
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }),
    workerId: "w", handleSignals: false, concurrency: 2, handlers: { h: () => "ok" },
  });
  return { m, w, open, completed, claimed: () => 10 - pending.length };
}

test("P-SDK-3: polls while a batch is unanswered, and caps the completions awaiting one", async () => {
  const { m, w, open, completed, claimed: got } = heldCompletions();
  const run = w.run();
  await until(() => got() === 4 && w.stats().in_flight === 4, "two more claimed while the first batch is held");
  assert.equal(completed.length, 0);
  // The cap: give a worker without one the time to claim a fifth (bounded), then answer.
  for (const end = Date.now() + 300; Date.now() < end && got() === 4;) await new Promise((r) => setTimeout(r, 5));
  assert.equal(got(), 4, "claimed beyond concurrency + completions awaiting answers");
  open();
  await until(() => w.stats().tasks_completed === 10, "every task completed");
  await w.stop();
  await run;
  assert.deepEqual([...completed].sort(), Array.from({ length: 10 }, (_, i) => `t${i}`).sort());
  const sizes = m.calls.filter((c) => c.key === "POST /workers/tasks/poll/batch").map((c) => (c.body as { batch_size: number }).batch_size);
  assert.ok(sizes.every((s) => s >= 1 && s <= 2), `poll sizes ${sizes}`);
});

test("P-SDK-7: stop still delivers completions whose slots were freed", async () => {
  const { w, open, completed } = heldCompletions();
  const run = w.run();
  await until(() => w.stats().in_flight === 4, "four held, two of them freed");
  const stopped = w.stop();
  open();
  await stopped;
  await run;
  assert.equal(completed.length, 4);
  assert.equal(w.stats().tasks_completed, 4);
  assert.equal(w.stats().in_flight, 0);
});

test("P-SDK-3: free slots count handed-over completions up to concurrency", () => {
  assert.equal(freeSlots(4, 4, 0), 0);
  assert.equal(freeSlots(4, 4, 3), 3);
  assert.equal(freeSlots(4, 8, 4), 0);
  assert.equal(freeSlots(4, 8, 6), 0, "beyond the cap a completion keeps its slot");
});
