// Issue 13's measure (P-SDK-13): a Worker with concurrency 150 drains 1,000 tasks against
// the real server and never sends a poll the server rejects.
import { test } from "node:test";
import assert from "node:assert/strict";
import { TestServer, waitFor } from "../helpers/server.js";
import { startWorker } from "../helpers/workers.js";

test("concurrency 150 drains 1,000 tasks; every poll is answered 200 and asks for at most 100", async () => {
  // The server's default lease (60 s): this test is about poll sizes, and on a loaded
  // machine the 2 s leases of FAST_FLAGS could expire under 150 held tasks.
  const server = await TestServer.start({ "reaper-interval-ms": 100 });
  const client = server.client();
  for (let start = 0; start < 1000; start += 100) {
    await client.enqueueBatch(Array.from({ length: 100 }, (_, k) => ({ handler_name: "drain_task", params: { i: start + k } })));
  }
  const t0 = Date.now();
  const w = startWorker(server, {
    concurrency: 150,
    handlers: { drain_task: async (ctx) => ({ i: ctx.params.i }) },
  });
  try {
    await waitFor(() => w.worker.stats().tasks_completed >= 1000, "1,000 completions", 120_000, 100)
      .catch((err: Error) => { throw new Error(`${err.message}; stats ${JSON.stringify(w.worker.stats())}`); });
    const seconds = (Date.now() - t0) / 1000;
    const page = await client.listTasks({ handler_name: "drain_task", status: ["pending"], limit: 1 });
    assert.equal(page.tasks.length, 0, "nothing left pending");
    const polls = w.calls.filter((c) => c.path === "/workers/tasks/poll/batch");
    assert.ok(polls.length > 0);
    const refused = polls.filter((c) => c.status !== 200 && c.status !== "pending" && c.status !== "error");
    assert.deepEqual(refused.map((c) => c.status), [], "no poll was refused");
    for (const c of polls) assert.ok((c.body as { batch_size: number }).batch_size <= 100);
    assert.ok(polls.some((c) => (c.body as { batch_size: number }).batch_size === 100), "asked for the cap at least once");
    const s = w.worker.stats();
    assert.equal(s.tasks_completed, 1000);
    assert.equal(s.poll_errors, 0);
    console.log(`# drained 1,000 tasks with concurrency 150 in ${seconds.toFixed(1)} s (${polls.length} polls)`);
  } finally {
    await w.close();
    await server.dispose();
  }
});
