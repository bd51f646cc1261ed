// graphile-worker peer, measured like pgboss.mjs: a running worker pool with a no-op task,
// jobs added in batches of 100 meanwhile (one `addJobs` call per batch: one add_jobs SQL
// statement), timed until no job is left (graphile-worker deletes a job when it succeeds).
// Usage: node graphile.mjs URL TASKS WARMUP
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import pg from "pg";

const [url, tasksArg, warmupArg] = process.argv.slice(2);
const tasks = Number(tasksArg ?? 10000);
const warmup = Number(warmupArg ?? 500);
const BATCH = 100;
// The configuration of graphile-worker's own throughput figures,
// https://worker.graphile.org/docs/performance ("Quick stats" and "Batching"): 24
// concurrent jobs, a pool of 25, a local queue of 500 jobs fetched (and locked) per query,
// completions and failures batched (delay 0).
const OPTIONS = { concurrency: 24, maxPoolSize: 25, noHandleSignals: true };
const PRESET = { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } };

const runner = await run({
  connectionString: url,
  ...OPTIONS,
  preset: PRESET,
  logger: new Logger(() => () => {}), // no per-job log lines on stdout
  taskList: { noop: async () => {} },
});
const utils = await makeWorkerUtils({ connectionString: url, logger: new Logger(() => () => {}) });
const db = new pg.Client({ connectionString: url });
await db.connect();
async function left() {
  const r = await db.query("SELECT count(*)::int AS n FROM graphile_worker.jobs");
  return r.rows[0].n;
}

// seconds and process CPU seconds (worker and producer: this one process) of one run
async function one(n) {
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < n; i += BATCH) {
    const count = Math.min(BATCH, n - i);
    await utils.addJobs(Array.from({ length: count }, () => ({ identifier: "noop", payload: {} })));
  }
  while ((await left()) > 0) await new Promise((r) => setTimeout(r, 5));
  const cpu = process.cpuUsage(cpu0);
  return [(performance.now() - start) / 1000, (cpu.user + cpu.system) / 1e6];
}

if (warmup > 0) await one(warmup);
const [secs, cpu] = await one(tasks);
const settings = `graphile-worker 0.17 run(${JSON.stringify(OPTIONS)}), preset ${JSON.stringify(PRESET)}, addJobs per 100 (docs: worker.graphile.org/docs/performance)`;
console.log(JSON.stringify({ tasks, seconds: secs, tasks_per_s: tasks / secs, cpu_s: cpu, settings }));
await db.end();
await utils.release();
await runner.stop();
process.exit(0);
