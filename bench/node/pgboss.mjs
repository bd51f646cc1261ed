// pg-boss peer, measured like orch8bench/peers.py: a running worker with a no-op job, a
// producer inserting batches of 100 meanwhile, timed to the moment the database shows
// every job completed. Usage: node pgboss.mjs URL TASKS WARMUP
import { PgBoss } from "pg-boss";
import pg from "pg";

const [url, tasksArg, warmupArg] = process.argv.slice(2);
const tasks = Number(tasksArg ?? 10000);
const warmup = Number(warmupArg ?? 500);
const QUEUE = "noop";
const BATCH = 100;
// pg-boss's documented knobs for throughput (types.d.ts, JobPollingOptions): fetch in
// batches, keep fetching while batches come back full, poll at the minimum interval, and
// wake workers by LISTEN/NOTIFY (instance `useListenNotify` + queue `notify`).
const WORK = { batchSize: 100, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 };

const boss = new PgBoss({ connectionString: url, useListenNotify: true });
boss.on("error", (err) => console.error(err));
await boss.start();
await boss.createQueue(QUEUE, { notify: true });
await boss.work(QUEUE, WORK, async () => {});

const db = new pg.Client({ connectionString: url });
await db.connect();
async function completed() {
  const r = await db.query("SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state = 'completed'", [QUEUE]);
  return r.rows[0].n;
}

// seconds and process CPU seconds (worker and producer: this one process) of one run
async function one(n, already) {
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < n; i += BATCH) {
    const count = Math.min(BATCH, n - i);
    await boss.insert(QUEUE, Array.from({ length: count }, () => ({ data: {} })));
  }
  while ((await completed()) < already + n) await new Promise((r) => setTimeout(r, 5));
  const cpu = process.cpuUsage(cpu0);
  return [(performance.now() - start) / 1000, (cpu.user + cpu.system) / 1e6];
}

if (warmup > 0) await one(warmup, 0);
const [secs, cpu] = await one(tasks, warmup);
const settings = `useListenNotify, queue notify, work(${JSON.stringify(WORK)}) (docs: types.d.ts JobPollingOptions)`;
console.log(JSON.stringify({ tasks, seconds: secs, tasks_per_s: tasks / secs, cpu_s: cpu, settings }));
await db.end();
await boss.stop({ graceful: false, wait: true });
process.exit(0);
