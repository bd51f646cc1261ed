// graphile-worker peer, measured like pgboss.mjs: a running worker pool with a no-op task,
// jobs added in batches of 100 meanwhile (one `add_job` SQL call per job, one statement
// per batch), timed until no job is left (graphile-worker deletes a job when it succeeds).
// Usage: node graphile.mjs URL TASKS WARMUP
import { Logger, run } from "graphile-worker";
import pg from "pg";

const [url, tasksArg, warmupArg] = process.argv.slice(2);
const tasks = Number(tasksArg ?? 10000);
const warmup = Number(warmupArg ?? 500);
const BATCH = 100;
// The README's recommended runner options, with concurrency raised from 1 for no-op jobs.
const OPTIONS = { concurrency: 10, pollInterval: 2000, noHandleSignals: true };

const runner = await run({
  connectionString: url,
  ...OPTIONS,
  logger: new Logger(() => () => {}), // no per-job log lines on stdout
  taskList: { noop: async () => {} },
});
const db = new pg.Client({ connectionString: url });
await db.connect();
let sent = 0;
async function left() {
  const r = await db.query("SELECT count(*)::int AS n FROM graphile_worker.jobs");
  return r.rows[0].n;
}

async function one(n) {
  const start = performance.now();
  for (let i = 0; i < n; i += BATCH) {
    const count = Math.min(BATCH, n - i);
    await db.query("SELECT graphile_worker.add_job('noop', '{}'::json) FROM generate_series(1, $1)", [count]);
    sent += count;
  }
  while ((await left()) > 0) await new Promise((r) => setTimeout(r, 5));
  return (performance.now() - start) / 1000;
}

if (warmup > 0) await one(warmup);
const secs = await one(tasks);
console.log(JSON.stringify({ tasks, tasks_per_s: tasks / secs, settings: `run(${JSON.stringify(OPTIONS)})` }));
await db.end();
await runner.stop();
process.exit(0);
