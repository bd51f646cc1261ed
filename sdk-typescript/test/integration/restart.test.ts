// The server restarted mid-run on the same SQLite file: the worker rides out the outage
// (P-SDK-9) and every task still completes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { TestServer, waitFor } from "../helpers/server.js";
import { startWorker, work } from "../helpers/workers.js";

test("server restart mid-run: the worker recovers and nothing is lost", async () => {
  const server = await TestServer.start();
  const client = server.client();
  let running = 0;
  const w = startWorker(server, {
    concurrency: 4,
    handlers: {
      rs_task: async (ctx) => {
        running++;
        await work(150);
        running--;
        return { i: ctx.params.i };
      },
    },
  });
  try {
    const tasks = await client.enqueueBatch(Array.from({ length: 40 }, (_, i) => ({ handler_name: "rs_task", params: { i } })));
    await waitFor(() => w.worker.stats().tasks_completed >= 8 && running > 0, "some tasks done and some running");
    await server.restart(700);
    await waitFor(async () => {
      const page = await client.listTasks({ handler_name: "rs_task", status: ["completed"], limit: 100 });
      return page.tasks.length === tasks.length;
    }, "all 40 tasks to complete after the restart", 30_000, 100);
    for (const t of tasks) {
      const got = await client.getTask(t.id);
      assert.deepEqual(got.output, { i: t.params.i });
    }
    // Requests really failed while the server was down (refused connections)...
    const failedCalls = w.calls.filter((c) => c.status === "error");
    assert.ok(failedCalls.length >= 1, "the outage was seen by the worker");
    // ...and the worker kept working after it: heartbeats and polls answered again.
    const lastFailure = w.calls.lastIndexOf(failedCalls.at(-1)!);
    const after = w.calls.slice(lastFailure + 1);
    assert.ok(after.some((c) => c.path.endsWith("/poll/batch") && c.status === 200), "polling resumed");
    assert.ok(after.some((c) => c.path === `/workers/${w.worker.workerId}/heartbeat` && c.status === 200), "heartbeats resumed");
    // The last acknowledgements may still be on their way when the server already shows
    // every task completed. A completion the outage kept from its answer until the lease
    // ran out counts as lease lost (P-SDK-9) and the task's next run completes it.
    const s = await waitFor(() => {
      const st = w.worker.stats();
      return st.in_flight === 0 && st.tasks_completed + st.tasks_lease_lost >= 40 ? st : undefined;
    }, "the worker to account for every task");
    assert.equal(s.tasks_claimed, s.tasks_completed + s.tasks_failed + s.tasks_lease_lost + s.tasks_cancelled, "P-SDK-11 invariant");
    assert.ok(s.tasks_completed >= 38, `completed ${s.tasks_completed}`);
  } finally {
    await w.close();
    await server.dispose();
  }
});
