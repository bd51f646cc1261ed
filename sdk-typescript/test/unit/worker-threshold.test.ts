// P-SDK-26: while results are being reported, a poll waits for their slots (the poll
// threshold) instead of claiming for the few slots already free.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Orch8Client, Worker, type Handler } from "../../src/index.js";
import { pollThreshold } from "../../src/worker/poller.js";
import { json, type Recorded } from "../helpers/mock-fetch.js";
import { batchAnswer, claimed, hangUntilAborted, item, routed, until, worker } from "../helpers/routed.js";

const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((r) => { open = r; });
  return { open, opened };
};
const itemsOf = (c: Recorded) => (c.body as { items: Array<{ task_id: string }> }).items;
const basics = (tasks: Array<[string, string]>) => ({
  "POST /workers": () => json(200, worker("w")),
  "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 1000, tasks: [] }),
  "POST /workers/tasks/poll/batch": (req: Recorded, n: number) =>
    n === 1 ? json(200, { tasks: tasks.map(([id, h]) => claimed(id, 60_000, h)), next_poll_after_ms: 0 }) : hangUntilAborted(req, n),
  "DELETE /workers/w": () => json(200, worker("w")),
});
const pollSizes = (m: ReturnType<typeof routed>) =>
  m.calls.filter((c) => c.key === "POST /workers/tasks/poll/batch").map((c) => (c.body as { batch_size: number }).batch_size);
const newWorker = (m: ReturnType<typeof routed>, handlers: Record<string, Handler>) =>
  new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false, concurrency: 4, handlers });

test("P-SDK-26: no poll for the one slot a result freed while three more are being reported", async () => {
  const first = gate();
  const second = gate();
  const sent = gate(); // the first request is in flight
  const m = routed({
    ...basics([["t1", "h"], ["t2", "h"], ["t3", "h"], ["t4", "h"]]),
    "POST /workers/tasks/complete/batch": async (req, n) => {
      if (n === 1) {
        sent.open();
        await first.opened;
      }
      if (n === 2) await second.opened;
      return json(200, batchAnswer(itemsOf(req).map((i) => item(i.task_id))));
    },
  });
  let finished = 0;
  // t1's result goes alone; the others become ready once its request is in flight (P-SDK-12).
  const w = newWorker(m, { h: async (ctx) => { if (ctx.task.id !== "t1") await sent.opened; finished++; return "ok"; } });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/complete/batch") === 1 && finished === 4, "the first batch in flight, every handler done");
  first.open(); // one slot is free now; three results are still being reported
  await until(() => w.stats().tasks_completed === 1, "the first completion");
  // A worker without the threshold polls for the one slot right away; give it the time (bounded).
  for (const end = Date.now() + 300; Date.now() < end && pollSizes(m).length === 1;) await new Promise((r) => setTimeout(r, 5));
  second.open();
  await until(() => w.stats().tasks_completed === 4 && pollSizes(m).length === 2, "all completions and the next poll");
  await w.stop();
  await run;
  assert.deepEqual(pollSizes(m), [4, 4], "the second poll waited for the four slots");
});

test("P-SDK-26, P-SDK-3: with every other held task still in its handler, one free slot is polled for at once", async () => {
  const long = gate();
  const m = routed({
    ...basics([["t1", "long"], ["t2", "long"], ["t3", "long"], ["t4", "quick"]]),
    "POST /workers/tasks/complete/batch": (req) => json(200, batchAnswer(itemsOf(req).map((i) => item(i.task_id)))),
  });
  const w = newWorker(m, { long: async () => { await long.opened; return "ok"; }, quick: () => "ok" });
  const run = w.run();
  await until(() => pollSizes(m).length === 2, "a second poll while three handlers run");
  assert.deepEqual(pollSizes(m), [4, 1]);
  long.open();
  await w.stop();
  await run;
});

test("P-SDK-26: the default threshold is half of min(concurrency, 100), rounded up; given values are capped", () => {
  const cases: Array<[number, number | undefined, number]> = [[1, undefined, 1], [4, undefined, 2], [10, undefined, 5], [101, undefined, 50], [150, undefined, 50], [10, 1, 1], [10, 30, 10], [300, 200, 100]];
  for (const [concurrency, given, want] of cases) assert.equal(pollThreshold(concurrency, given), want, `${concurrency}, ${given}`);
  assert.throws(() => new Worker({ handlers: { h: () => null }, handleSignals: false, pollThreshold: 0 }), /pollThreshold must be an integer >= 1/);
});
