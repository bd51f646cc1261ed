"""Candidate stored models for PostgreSQL, measured by bare SQL (issue 30): which table
layout brings the database's CPU per task toward the minimal table's.

    python -m orch8bench.schemas [--tasks 30000] [--reps 3] [--conns 4] [--only A,C]
        [--plans auto|analyze] [--prefill N] [--pg-setting NAME=VALUE ...]

A throwaway cluster (fsync on, as `make bench`); per layout and repetition a fresh database,
a warm-up of a tenth of the tasks (`--plans analyze`: then an ANALYZE), then `--tasks`
through enqueue -> claim -> complete at batch 100 by `--conns` loops (as minimal.py's
bare-SQL row; finished rows kept). The statements are shaped like the server's: one
multi-row INSERT (json_to_recordset), one claim CTE with FOR UPDATE SKIP LOCKED in the
claim index's order (with the pause/cap guards and the label filter), one set-based
completion (A-D also write the attempt row).
`--prefill N` runs N tasks through each database before its warm-up (finished rows kept:
history, as a server's table holds), `--pg-setting` sets more cluster settings (e.g.
`autovacuum_naptime=5`). Layouts run interleaved (the order rotates per repetition);
medians are reported:

- CPU us/task of the loops' PostgreSQL backends (/proc, as env.cpu_seconds) and of the
  whole cluster (WAL writer, checkpointer, autovacuum too: env.cluster_cpu_seconds);
- HOT share of updates (pg_stat_user_tables, counters reset after the warm-up);
- index entries written per task: B-tree leaf inserts in the window's WAL (pg_walinspect;
  page splits carry one entry each), and WAL bytes per task.

Layouts (layouts.py): A the schema of 2026-11-27 (postgres_schema V1..V9), T today's
(V1..V18, no attempt row for a success), B a narrow `ready` queue beside
A's tasks, P A's table partitioned by status, C a narrow hot `open` table updated in place
(HOT) + write-once `bodies` + `done`, D as C with pending-only claim indexes (claims not
HOT), E and F as D and C with no attempt row for a success (its `done` row is the record),
G as E with list and running-work indexes, H as F with the list index, M the minimal table
(minimal.py) as the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from orch8bench import minimal
from orch8bench.env import PgCluster, cluster_cpu_seconds, cpu_seconds, loadavg, log, pg_settings
from orch8bench.layouts import LAYOUTS, NEW, Layout

BATCH = 100
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


async def measure(
    cluster: PgCluster,
    layout: Layout,
    db: str,
    tasks: int,
    conns: int,
    plans: str,
    prefill: int = 0,
) -> dict:
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
    if prefill:
        await drive(layout, pairs, prefill)  # history: finished rows kept
    await drive(layout, pairs, max(tasks // 10, BATCH))  # warm-up
    # --plans analyze: the statistics of the warmed-up tables (every task finished, so C-H's
    # `open` is empty) instead of autoanalyze's of the young ones.
    if plans == "analyze":
        await setup.execute("ANALYZE")
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
    """Medians per layout; `x A` is the median of each repetition's backend CPU over A's in
    the same repetition (the load moves both alike)."""
    lines = [
        "| layout | tasks/s | PG backend CPU us/task | x A | PG cluster CPU us/task "
        "| HOT share | updates/task | index entries/task | WAL B/task |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    base = {r["rep"]: r["backend_us"] for r in runs if r["layout"] == "A"}
    for name in names:
        mine = [r for r in runs if r["layout"] == name]

        def med(key: str, mine: list[dict] = mine) -> float:
            return statistics.median(r[key] or 0 for r in mine)

        ratios = [r["backend_us"] / base[r["rep"]] for r in mine if base.get(r["rep"])]
        ratio = f"{statistics.median(ratios):.2f}" if ratios else "-"
        hot = "-" if mine[0]["hot_share"] is None else f"{med('hot_share'):.0%}"
        lines.append(
            f"| {name} | {med('tasks_per_s'):,.0f} | {med('backend_us'):.0f} | {ratio} "
            f"| {med('cluster_us'):.0f} | {hot} | {med('updates_per_task'):.2f} "
            f"| {med('index_entries'):.2f} | {med('wal_bytes'):,.0f} |"
        )
    return "\n".join(lines)


async def run(
    tasks: int,
    reps: int,
    conns: int,
    names: list[str],
    plans: str,
    prefill: int = 0,
    settings: dict[str, str] | None = None,
) -> list[dict]:
    cluster = PgCluster(fsync=True, settings={"wal_keep_size": "4GB", **(settings or {})}).init()
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
                db = f"{name.lower()}_{rep}"
                got = await measure(cluster, LAYOUTS[name], db, tasks, conns, plans, prefill)
                log("schemas: " + json.dumps({k: round(v, 3) if isinstance(v, float) else v
                                              for k, v in got.items()}))  # fmt: skip
                runs.append({**got, "rep": rep})
        return runs
    finally:
        cluster.destroy()


def main(argv: list[str] | None = None) -> tuple[list[dict], str]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=30_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--only", default=",".join(LAYOUTS), help="comma list of layouts")
    ap.add_argument("--plans", choices=["auto", "analyze"], default="auto",
                    help="statistics: autoanalyze's only, or an ANALYZE after the warm-up")  # fmt: skip
    ap.add_argument("--prefill", type=int, default=0,
                    help="tasks run through each database first (finished rows kept)")  # fmt: skip
    ap.add_argument("--pg-setting", action="append", default=[], metavar="NAME=VALUE",
                    help="another cluster setting (repeatable), e.g. autovacuum_naptime=5")  # fmt: skip
    a = ap.parse_args(argv)
    names = [n.strip().upper() for n in a.only.split(",") if n.strip()]
    if unknown := [n for n in names if n not in LAYOUTS]:
        ap.error(f"--only: unknown {', '.join(unknown)}; one of {', '.join(LAYOUTS)}")
    settings = pg_settings(ap, a.pg_setting)
    load = loadavg()
    runs = asyncio.run(run(a.tasks, a.reps, a.conns, names, a.plans, a.prefill, settings))
    extra = "".join(f", {k}={v}" for k, v in settings.items())
    extra += f", after a prefill of {a.prefill:,} tasks" if a.prefill else ""
    text = (
        f"{a.tasks:,} tasks per run at batch {BATCH}, {a.conns} loops, median of {a.reps} "
        f"interleaved runs, plans {a.plans}{extra}; load {load} -> {loadavg()}\n\n"
        f"{summary(runs, names)}\n"
    )
    print(text, flush=True)
    return runs, text


if __name__ == "__main__":
    main()
