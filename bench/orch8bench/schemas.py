"""Candidate stored models for PostgreSQL, measured by bare SQL (issue 30): which table
layout brings the database's CPU per task toward the minimal table's.

    python -m orch8bench.schemas [--tasks 30000] [--reps 3] [--conns 4] [--only A,C]

A throwaway cluster (fsync on, as `make bench`); per layout and repetition a fresh database,
a warm-up of a tenth of the tasks, then `--tasks` through enqueue -> claim -> complete at
batch 100 by `--conns` loops (as minimal.py's bare-SQL row; finished rows kept). The
statements are shaped like the server's: one multi-row INSERT (json_to_recordset), one
claim CTE with FOR UPDATE SKIP LOCKED in the claim index's order (with the pause/cap
guards and the label filter), one set-based completion that writes the attempt row too.
Layouts run interleaved (the order rotates per repetition); medians are reported:

- CPU us/task of the loops' PostgreSQL backends (/proc, as env.cpu_seconds) and of the
  whole cluster (WAL writer, checkpointer, autovacuum too: env.cluster_cpu_seconds);
- HOT share of updates (pg_stat_user_tables, counters reset after the warm-up);
- index entries written per task: B-tree leaf inserts in the window's WAL (pg_walinspect;
  page splits carry one entry each), and WAL bytes per task.

Layouts: A today's (postgres_schema V1..V9), B a narrow `ready` queue beside A's tasks, C a
narrow hot `open` table updated in place (HOT) + write-once `bodies` + `done`, D as C with
partial (pending-only) claim indexes, M the minimal table (minimal.py) as the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orch8bench import minimal
from orch8bench.env import PgCluster, cluster_cpu_seconds, cpu_seconds, loadavg, log

BATCH = 100
GUARDS = (  # the plain claim's P-CTRL-1/2 guards (postgres_claim.py), $8 the tenant
    "NOT EXISTS (SELECT 1 FROM handler_controls hc WHERE hc.tenant = $8 "
    "AND hc.handler_name = h.name AND hc.max_running IS NOT NULL) AND NOT EXISTS "
    "(SELECT 1 FROM queue_controls qc WHERE qc.tenant = $8 AND qc.queue_name = $1 "
    "AND (qc.paused OR qc.max_running IS NOT NULL))"
)
CONTROLS = """
CREATE TABLE queue_controls (tenant text, queue_name text, paused boolean NOT NULL DEFAULT false,
    max_running integer, PRIMARY KEY (tenant, queue_name));
CREATE TABLE handler_controls (tenant text, handler_name text, max_running integer,
    PRIMARY KEY (tenant, handler_name));
CREATE TABLE attempts (task_id text NOT NULL, lease_id text NOT NULL, attempt integer NOT NULL,
    worker_id text, started_at bigint NOT NULL, ended_at bigint NOT NULL, outcome text NOT NULL,
    error json, reply json, PRIMARY KEY (task_id, lease_id));
"""
AUTOVACUUM = "autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 0"
# Today's tasks table as V1..V9 leave it (column order included), without its triggers:
# the per-row NOTIFY (~7 us/task, pg-statements-after-v8) is the same for every layout,
# and the workflow-event trigger is what issue 30 removes.
TYPES = {
    "seq": "bigint GENERATED ALWAYS AS IDENTITY", "id": "text PRIMARY KEY",
    "handler_name": "text", "queue_name": "text", "status": "text", "priority": "integer",
    "params": "json", "context": "json", "headers": "json", "attempt": "integer",
    "max_attempts": "integer", "retry": "json", "run_at": "bigint", "good_until": "bigint",
    "idempotency_key": "text", "created_at": "bigint", "updated_at": "bigint",
    "started_at": "bigint", "finished_at": "bigint", "worker_id": "text", "lease_id": "text",
    "lease_expires_at": "bigint", "lease_ms": "bigint", "lease_started_at": "bigint",
    "output": "json", "error": "json", "checkpoint": "json", "progress": "json",
    "cancel_reason": "text", "required_labels": "jsonb", "tenant": "text",
}  # fmt: skip
NEW = [c for c in TYPES if c != "seq"]  # what an enqueue writes (postgres_bulk.NEW_TASK_COLS)
RECORDSET = (
    "json_to_recordset($1::json) AS r(" + ", ".join(f"{c} {TYPES[c].split()[0]}" for c in NEW) + ")"
)


def table(name: str, cols: list[str], fillfactor: int) -> str:
    body = ", ".join(f"{c} {TYPES[c]}" for c in cols)
    return f"CREATE TABLE {name} ({body}) WITH (fillfactor = {fillfactor}, {AUTOVACUUM});\n"


TASK_INDEXES = """
CREATE INDEX tasks_scheduled ON tasks (run_at) WHERE status = 'scheduled';
CREATE INDEX tasks_leases ON tasks (lease_expires_at) WHERE status = 'running';
CREATE INDEX tasks_good_until ON tasks (good_until)
    WHERE good_until IS NOT NULL AND status IN ('pending', 'scheduled');
CREATE INDEX tasks_open_seq ON tasks (tenant, status, seq)
    WHERE status IN ('pending', 'scheduled', 'running');
CREATE INDEX tasks_ended_seq ON tasks (tenant, status, seq)
    WHERE status IN ('failed', 'cancelled', 'expired');
CREATE INDEX tasks_tenant_seq ON tasks (tenant, seq);
CREATE INDEX tasks_worker_seq ON tasks (tenant, worker_id, seq) WHERE worker_id IS NOT NULL;
CREATE UNIQUE INDEX tasks_idempotency_key ON tasks (tenant, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX tasks_running_queue ON tasks (tenant, queue_name, handler_name)
    WHERE status = 'running';
"""


def claim_indexes(table: str, where: str) -> str:
    return (
        f"CREATE INDEX {table}_claim_handler ON {table} "
        f"(tenant, queue_name, handler_name, priority, seq){where};\n"
        f"CREATE INDEX {table}_claim_any ON {table} (tenant, queue_name, priority, seq){where};\n"
    )


PENDING = " WHERE status = 'pending'"
DDL_A = table("tasks", list(TYPES), 90) + TASK_INDEXES + claim_indexes("tasks", PENDING)
READY = ["tenant", "queue_name", "handler_name", "priority", "seq", "id", "required_labels"]
DDL_B = (
    table("tasks", list(TYPES), 90) + TASK_INDEXES
    + "CREATE TABLE ready (tenant text, queue_name text, handler_name text, priority integer, "
    f"seq bigint, id text, required_labels jsonb) WITH ({AUTOVACUUM});\n"
    + claim_indexes("ready", "")
)  # fmt: skip
# C/D: the hot row of open work, its write-once body, and the finished record.
OPEN = ["id", "tenant", "queue_name", "handler_name", "priority", "seq", "status", "attempt",
        "max_attempts", "run_at", "good_until", "worker_id", "lease_id", "lease_expires_at",
        "lease_ms", "lease_started_at", "started_at", "required_labels", "created_at",
        "updated_at"]  # fmt: skip
BODY = ["id", "tenant", "params", "context", "headers", "retry", "checkpoint", "idempotency_key"]
DONE = ["id", "tenant", "queue_name", "handler_name", "priority", "seq", "status", "attempt",
        "max_attempts", "run_at", "worker_id", "lease_id", "lease_started_at", "created_at",
        "started_at", "finished_at", "output", "error", "cancel_reason"]  # fmt: skip
SIDE = (
    table("bodies", BODY, 100)
    + "CREATE UNIQUE INDEX bodies_idempotency_key ON bodies (tenant, idempotency_key) "
    "WHERE idempotency_key IS NOT NULL;\n"
    + table("done", DONE, 100).replace(" GENERATED ALWAYS AS IDENTITY", "")
    + "CREATE INDEX done_tenant_seq ON done (tenant, seq);\n"
    "CREATE INDEX done_ended_seq ON done (tenant, status, seq) WHERE status <> 'completed';\n"
)
# C: nothing a claim or a heartbeat changes is indexed (not even in a predicate): claims
# are HOT, and a claim scan steps over the running rows still in the claim index.
DDL_C = (
    table("open", OPEN, 30) + claim_indexes("open", "")
    + "CREATE INDEX open_run_at ON open (run_at);\n" + SIDE
)  # fmt: skip
# D: as C, but the claim indexes hold pending rows only: a claim is not HOT (one primary
# key entry), heartbeats (lease_expires_at) still are.
DDL_D = (
    table("open", OPEN, 70) + claim_indexes("open", PENDING)
    + "CREATE INDEX open_scheduled ON open (run_at) WHERE status = 'scheduled';\n" + SIDE
)  # fmt: skip


def live(then: str, otherwise: str) -> str:  # a claimed row past good_until expires
    return f"CASE WHEN (t.good_until IS NULL OR t.good_until > $3) THEN {then} ELSE {otherwise} END"


RUNNING, EXPIRED = "'running'", "'expired'"
LEASE = (
    f"status = {live(RUNNING, EXPIRED)}, "
    f"attempt = {live('t.attempt + 1', 't.attempt')}, "
    f"lease_id = {live('($6::text[])[r.rn]', 't.lease_id')}, "
    f"lease_expires_at = {live('$3 + $4', 't.lease_expires_at')}, "
    f"lease_ms = {live('$4', 't.lease_ms')}, lease_started_at = {live('$3', 't.lease_started_at')}, "
    f"worker_id = {live('$5', 't.worker_id')}, "
    f"started_at = {live('COALESCE(t.started_at, $3)', 't.started_at')}, updated_at = $3"
)
CLAIMED = ("seq", "id", "handler_name", "queue_name", "priority", "params", "context",
           "headers", "attempt", "max_attempts", "checkpoint", "good_until", "created_at",
           "started_at", "run_at", "tenant", "status", "lease_id", "worker_id",
           "lease_expires_at", "lease_ms", "lease_started_at")  # fmt: skip
JSON_TEXT = ("params", "context", "headers", "checkpoint")


def returned(row: str, body: str) -> str:
    return ", ".join(
        f"{body}.{c}::text AS {c}" if c in JSON_TEXT else f"{row}.{c}" for c in CLAIMED
    )


def pick(table: str, filters: str, cols: str = "id, seq, priority") -> str:
    """postgres_claim.claim_sql's by-handler pick: one LATERAL scan per handler ($7)."""
    return (
        f"SELECT c.* FROM unnest($7::text[]) AS h(name), LATERAL (SELECT {cols} FROM {table} t "
        f"WHERE {filters}tenant = $8 AND queue_name = $1 AND handler_name = h.name "
        f"AND t.required_labels IS NULL AND {GUARDS} ORDER BY priority, seq LIMIT $2 "
        "FOR UPDATE SKIP LOCKED) c ORDER BY c.priority, c.seq LIMIT $2"
    )


RANKED = "ranked AS (SELECT id, row_number() OVER (ORDER BY priority, seq) AS rn FROM {src})"
CLAIM_A = (
    f"WITH pick AS ({pick('tasks', 'status = ' + repr('pending') + ' AND ')}), "
    + RANKED.format(src="pick")
    + f" UPDATE tasks t SET {LEASE}, finished_at = {live('t.finished_at', '$3')} "
    f"FROM ranked r WHERE t.id = r.id RETURNING {returned('t', 't')}"
)
CLAIM_B = (
    f"WITH pick AS ({pick('ready', '', 'ctid AS rid, id, seq, priority')}), "
    "gone AS (DELETE FROM ready WHERE ctid = ANY(ARRAY(SELECT rid FROM pick)) "
    "RETURNING id, priority, seq), "
    + RANKED.format(src="gone")
    + f" UPDATE tasks t SET {LEASE}, finished_at = {live('t.finished_at', '$3')} "
    f"FROM ranked r WHERE t.id = r.id RETURNING {returned('t', 't')}"
)
CLAIM_OPEN = (  # C and D: the hot row leased in place, the body joined for the answer
    f"WITH pick AS ({pick('open', 'status = ' + repr('pending') + ' AND ')}), "
    + RANKED.format(src="pick")
    + f", up AS (UPDATE open t SET {LEASE} FROM ranked r WHERE t.id = r.id RETURNING t.*) "
    f"SELECT {returned('u', 'b')} FROM up u JOIN bodies b ON b.id = u.id"
)
ITEMS = (
    "c AS MATERIALIZED (SELECT u.id, u.lease_id, u.output, 'running'::text AS live "
    "FROM unnest($1::text[], $2::text[], $3::text[]) AS u(id, lease_id, output))"
)
ATTEMPT = (
    "INSERT INTO attempts (task_id, lease_id, attempt, worker_id, started_at, ended_at, "
    "outcome, error, reply) SELECT id, lease_id, attempt, worker_id, lease_started_at, $4, "
    "'completed', NULL, json_build_object('task_id', id, 'status', 'completed', 'attempt', "
    "attempt, 'attempts_left', greatest(0, max_attempts - attempt), 'next_attempt_at', NULL, "
    "'error_code', NULL) FROM done_ ON CONFLICT (task_id, lease_id) DO UPDATE SET "
    "attempt = EXCLUDED.attempt, worker_id = EXCLUDED.worker_id, started_at = "
    "EXCLUDED.started_at, ended_at = EXCLUDED.ended_at, outcome = EXCLUDED.outcome, "
    "error = EXCLUDED.error, reply = EXCLUDED.reply"
)
COMPLETED = ("id", "lease_id", "attempt", "max_attempts", "worker_id", "lease_started_at",
             "queue_name", "handler_name", "run_at", "tenant")  # fmt: skip
COMPLETE_TASKS = (  # A and B: postgres_tx._COMPLETE_RUNNING
    f"WITH {ITEMS}, done_ AS (UPDATE tasks AS t SET status = 'completed', "
    "output = c.output::json, finished_at = $4, updated_at = $4 FROM c WHERE t.id = c.id "
    "AND t.lease_id = c.lease_id AND t.status = c.live AND t.tenant = $5 RETURNING "
    + ", ".join(f"t.{c}" for c in COMPLETED)
    + ", t.status, t.headers, t.context->>'instance_id' AS instance_id), "
    f"ended AS ({ATTEMPT}) SELECT * FROM done_"
)


def complete_open(attempt_row: bool) -> str:
    """C, D, E: the hot row moved to `done` by the completing statement; E keeps no attempt
    row for a success: its `done` row is that attempt's record."""
    ended = f"ended AS ({ATTEMPT}) " if attempt_row else ""
    return (
        f"WITH {ITEMS}, done_ AS (DELETE FROM open t USING c WHERE t.id = c.id "
        "AND t.lease_id = c.lease_id AND t.status = c.live AND t.tenant = $5 "
        "RETURNING t.*, c.output), "
        f"moved AS (INSERT INTO done ({', '.join(DONE)}) SELECT "
        + ", ".join({"status": "'completed'", "finished_at": "$4::bigint",
                     "output": "output::json", "error": "NULL",
                     "cancel_reason": "NULL"}.get(c, c) for c in DONE)
        + f" FROM done_){', ' if attempt_row else ' '}{ended}SELECT "
        + ", ".join(f"d.{c}" for c in COMPLETED)
        + ", 'completed' AS status, b.headers, b.context->>'instance_id' AS instance_id "
        "FROM done_ d JOIN bodies b ON b.id = d.id"
    )  # fmt: skip


INSERT_A = f"INSERT INTO tasks ({', '.join(NEW)}) SELECT {', '.join(NEW)} FROM {RECORDSET}"
INSERT_B = (
    f"WITH ins AS ({INSERT_A} RETURNING {', '.join(READY)}, status) "
    f"INSERT INTO ready ({', '.join(READY)}) SELECT {', '.join(READY)} FROM ins "
    "WHERE status = 'pending'"
)
OPEN_NEW = [c for c in OPEN if c != "seq"]
INSERT_OPEN = (
    f"WITH r AS (SELECT * FROM {RECORDSET}), "
    f"b AS (INSERT INTO bodies ({', '.join(BODY)}) SELECT {', '.join(BODY)} FROM r) "
    f"INSERT INTO open ({', '.join(OPEN_NEW)}) SELECT {', '.join(OPEN_NEW)} FROM r"
)


@dataclass(frozen=True)
class Layout:
    name: str
    ddl: str
    insert: str
    claim: str
    complete: str


LAYOUTS = {
    "A": Layout("A", DDL_A + CONTROLS, INSERT_A, CLAIM_A, COMPLETE_TASKS),
    "B": Layout("B", DDL_B + CONTROLS, INSERT_B, CLAIM_B, COMPLETE_TASKS),
    "C": Layout("C", DDL_C + CONTROLS, INSERT_OPEN, CLAIM_OPEN, complete_open(True)),
    "D": Layout("D", DDL_D + CONTROLS, INSERT_OPEN, CLAIM_OPEN, complete_open(True)),
    "E": Layout("E", DDL_D + CONTROLS, INSERT_OPEN, CLAIM_OPEN, complete_open(False)),
    "F": Layout("F", DDL_C + CONTROLS, INSERT_OPEN, CLAIM_OPEN, complete_open(False)),
    "M": Layout("M", minimal.PG_SCHEMA, minimal.PgJobs._INSERT, minimal.PgJobs._CLAIM,
                minimal.PgJobs._COMPLETE),
}  # fmt: skip
_ids = itertools.count()
_PREFIX = f"{time.time_ns() // 1_000_000:012x}"  # time-ordered ids, as the server's ULIDs


def new_task(now: int) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(NEW)
    row.update(id=f"task_{_PREFIX}{next(_ids):014x}", handler_name="bench", queue_name="default",
               status="pending", priority=0, params={}, context={}, headers={}, attempt=0,
               max_attempts=3, retry={"initial_ms": 1000, "factor": 2}, run_at=now,
               created_at=now, updated_at=now, tenant="default")  # fmt: skip
    return row


async def cycle(layout: Layout, durable: Any, claims: Any, n: int) -> int:
    """Enqueue n (if n), claim a batch, complete what was claimed; returns completed."""
    now = time.time_ns() // 1_000_000
    if layout.name == "M":
        if n:
            await durable.execute(layout.insert, ["{}"] * n)
        lease = minimal.lease_token()
        got = await claims.fetch(layout.claim, lease, BATCH)
        ids, leases = [r[0] for r in got], [lease] * len(got)
        if not ids:
            return 0
        status = await durable.execute(layout.complete, ids, leases)
        return int(status.rsplit(" ", 1)[1])
    if n:
        await durable.execute(layout.insert, json.dumps([new_task(now) for _ in range(n)]))
    new_leases = [f"lease_{os.urandom(10).hex()}" for _ in range(BATCH)]
    got = await claims.fetch(layout.claim, "default", BATCH, now, 300_000, "worker-1",
                             new_leases, ["bench"], "default")  # fmt: skip
    held = [(r["id"], r["lease_id"]) for r in got if r["status"] == "running"]
    if not held:
        return 0
    done = await durable.fetch(layout.complete, [i for i, _ in held], [lease for _, lease in held],
                               ['{"ok":true}'] * len(held), now, "default")  # fmt: skip
    return len(done)


async def drive(layout: Layout, pairs: list[tuple[Any, Any]], tasks: int) -> int:
    """One loop per connection pair, racing for rows (SKIP LOCKED), as minimal.run_pg."""
    left, done = [tasks], [0]

    async def loop(durable: Any, claims: Any) -> None:
        while True:
            n = min(BATCH, left[0])
            left[0] -= n
            got = await cycle(layout, durable, claims, n)
            done[0] += got
            if not got and not n and left[0] == 0:
                return

    await asyncio.gather(*(loop(d, c) for d, c in pairs))
    return done[0]


TABLE_STATS = "SELECT sum(n_tup_upd), sum(n_tup_hot_upd) FROM pg_stat_user_tables"
# B-tree leaf inserts (a split record carries the new entry too); internal-page inserts
# and deduplication passes write no new entry.
ENTRIES = (
    "SELECT coalesce(sum(count), 0) FROM pg_get_wal_stats($1::text::pg_lsn, "
    "least($2::text::pg_lsn, pg_current_wal_flush_lsn()), true) "
    "WHERE \"resource_manager/record_type\" IN ('Btree/INSERT_LEAF', 'Btree/INSERT_POST', "
    "'Btree/SPLIT_L', 'Btree/SPLIT_R')"
)


async def measure(cluster: PgCluster, layout: Layout, db: str, tasks: int, conns: int) -> dict:
    import asyncpg

    url = cluster.create_database(db)
    admin = await asyncpg.connect(cluster.url())
    setup = await asyncpg.connect(url)
    await setup.execute(layout.ddl)
    pairs = [
        (await asyncpg.connect(url),
         await asyncpg.connect(url, server_settings={"synchronous_commit": "off"}))
        for _ in range(conns)
    ]  # fmt: skip
    conn_list = [c for pair in pairs for c in pair]
    pids = [c.get_server_pid() for c in conn_list]
    await drive(layout, pairs, max(tasks // 10, BATCH))  # warm-up
    for c in conn_list:  # the warm-up's table counts reach the statistics before the reset
        await c.execute("SELECT pg_stat_force_next_flush()")
    await setup.execute("SELECT pg_stat_reset()")
    lsn0 = await admin.fetchval("SELECT pg_current_wal_insert_lsn()::text")
    cpu0, db0 = sum(cpu_seconds(p) for p in pids), cluster_cpu_seconds(cluster)
    t0 = time.perf_counter()
    done = await drive(layout, pairs, tasks)
    secs = time.perf_counter() - t0
    cpu1, db1 = sum(cpu_seconds(p) for p in pids), cluster_cpu_seconds(cluster)
    lsn1 = await admin.fetchval("SELECT pg_current_wal_insert_lsn()::text")
    if done != tasks:
        raise RuntimeError(f"{layout.name}: {done} of {tasks} tasks completed")
    for c in conn_list:
        await c.close()
    # A backend writes its last table counts as it exits: wait for the loops' backends.
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    upd, hot = await setup.fetchrow(TABLE_STATS)
    # A durable commit flushes the window's WAL (claims commit without waiting for it); the
    # end is capped at the flushed position, which an insert position at a page start passes.
    await admin.execute("SELECT txid_current()")
    entries = await admin.fetchval(ENTRIES, lsn0, lsn1)
    wal = await admin.fetchval(
        "SELECT pg_wal_lsn_diff($2::text::pg_lsn, $1::text::pg_lsn)", lsn0, lsn1
    )
    await setup.close()
    await admin.execute(f'DROP DATABASE "{db}"')  # its autovacuum must not bill the next run
    await admin.close()
    return {
        "layout": layout.name, "tasks": done, "tasks_per_s": done / secs,
        "backend_us": (cpu1 - cpu0) * 1e6 / done, "cluster_us": (db1 - db0) * 1e6 / done,
        "hot_share": float(hot or 0) / float(upd) if upd else None,
        "updates_per_task": float(upd or 0) / done,
        "index_entries": int(entries) / done, "wal_bytes": float(wal) / done,
    }  # fmt: skip


def summary(runs: list[dict], names: list[str]) -> str:
    lines = [
        "| layout | tasks/s | PG backend CPU us/task | PG cluster CPU us/task | HOT share "
        "| updates/task | index entries/task | WAL B/task |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        mine = [r for r in runs if r["layout"] == name]

        def med(key: str, mine: list[dict] = mine) -> float:
            return statistics.median(r[key] or 0 for r in mine)

        hot = "-" if mine[0]["hot_share"] is None else f"{med('hot_share'):.0%}"
        lines.append(
            f"| {name} | {med('tasks_per_s'):,.0f} | {med('backend_us'):.0f} "
            f"| {med('cluster_us'):.0f} | {hot} | {med('updates_per_task'):.2f} "
            f"| {med('index_entries'):.2f} | {med('wal_bytes'):,.0f} |"
        )
    return "\n".join(lines)


async def run(tasks: int, reps: int, conns: int, names: list[str]) -> list[dict]:
    cluster = PgCluster(fsync=True, settings={"wal_keep_size": "4GB"}).init()
    try:
        import asyncpg

        admin = await asyncpg.connect(cluster.url())
        await admin.execute("CREATE EXTENSION pg_walinspect")
        await admin.close()
        runs = []
        for rep in range(reps):
            order = names[rep % len(names) :] + names[: rep % len(names)]
            for name in order:
                log(f"schemas: {name} rep {rep + 1}/{reps}, load {loadavg()}")
                got = await measure(cluster, LAYOUTS[name], f"{name.lower()}_{rep}", tasks, conns)
                log("schemas: " + json.dumps({k: round(v, 3) if isinstance(v, float) else v
                                              for k, v in got.items()}))  # fmt: skip
                runs.append(got)
        return runs
    finally:
        cluster.destroy()


def main(argv: list[str] | None = None) -> tuple[list[dict], str]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=30_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--only", default=",".join(LAYOUTS), help="comma list of layouts")
    a = ap.parse_args(argv)
    names = [n.strip().upper() for n in a.only.split(",") if n.strip()]
    load = loadavg()
    runs = asyncio.run(run(a.tasks, a.reps, a.conns, names))
    text = (
        f"{a.tasks:,} tasks per run at batch {BATCH}, {a.conns} loops, median of {a.reps} "
        f"interleaved runs; load {load} -> {loadavg()}\n\n{summary(runs, names)}\n"
    )
    print(text, flush=True)
    return runs, text


if __name__ == "__main__":
    main()
