"""Where PostgreSQL's time goes, per statement and per table, for the bench's batch loop.

    python -m orch8bench.pgstat [--tasks 30000] [--batch 100] [--top 20]
    python -m orch8bench.pgstat --workflows 2000   # the bench's 3-step workflow row instead
    python -m orch8bench.pgstat --keys 1 --key-limit 200  # with concurrency keys (keys.py)
    python -m orch8bench.pgstat --prefill 300000 --tasks 150000 [--pg-setting autovacuum_naptime=5]

A throwaway cluster (fsync on, `pg_stat_statements` preloaded, nested statements tracked:
the NOTIFY trigger's too) and one server (working tree). A warm-up of a tenth of the
tasks, then the statistics are reset and the load client runs `--tasks` through enqueue,
claim and complete at `--batch` (finished rows kept, as in `make bench`). Reported per
task, from the database's own accounting:

- per statement: calls, execution ms in total and us per task, rows, shared blocks hit
  and dirtied, WAL bytes per task; the top `--top` by execution time;
- per table: inserts, updates and how many were HOT (an update that writes no index
  entry), deletes, live and dead rows;
- per index: size, scans, and the entries per task it carries;
- CPU per task by PostgreSQL process kind (backends, autovacuum workers, WAL writer, ...),
  from /proc sampled every 0.1 s during the measured run, and the CPU of the children the
  postmaster reaped meanwhile (an autovacuum worker that ended between two samples).

`--prefill N` first runs N tasks through the server (finished rows kept, as `make bench`'s
earlier phases leave its table); `--pg-setting name=value` (repeatable) sets more cluster
settings, e.g. `autovacuum_naptime=5` against the default 60 s.

Output: bench/profiles/pg-statements.md (and printed). The figure to move is CPU per
task (`orch8bench.ab`); this says which statement and which index pay for it.
"""

from __future__ import annotations

import argparse
import collections
import csv
import io
import shutil
import threading
from pathlib import Path

from orch8bench.env import (
    BENCH,
    TICK,
    PgCluster,
    Workdir,
    children_ticks,
    launch_server,
    loadgen,
    log,
    pg_settings,
    postmaster_pid,
    proc_stat,
)

OUT = BENCH / "profiles" / "pg-statements.md"
SETTINGS = {
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track": "all",
    "pg_stat_statements.max": "2000",
    # Planning is not execution: a statement re-planned on every call cost more planning
    # than execution at batch 1 and showed nowhere until this was on (the server's
    # plan_cache_mode, postgres.py).
    "pg_stat_statements.track_planning": "on",
    "track_counts": "on",
}
STATEMENTS = """
SELECT calls, round(total_exec_time::numeric, 1), plans, round(total_plan_time::numeric, 1),
       rows, shared_blks_hit, shared_blks_dirtied, wal_bytes,
       regexp_replace(left(query, 160), '\\s+', ' ', 'g')
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND query NOT ILIKE '%pg_stat_statements%'
ORDER BY total_exec_time + total_plan_time DESC
"""
TABLES = """
SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, n_live_tup, n_dead_tup
FROM pg_stat_user_tables ORDER BY n_tup_ins + n_tup_upd + n_tup_del DESC
"""
INDEXES = """
SELECT s.relname, s.indexrelname, pg_relation_size(s.indexrelid), s.idx_scan
FROM pg_stat_user_indexes s ORDER BY pg_relation_size(s.indexrelid) DESC
"""


# /proc/PID/cmdline of a postmaster's child names its kind ("postgres: autovacuum worker").
KINDS = ("autovacuum worker", "autovacuum launcher", "walwriter", "checkpointer",
         "background writer", "logical replication launcher")  # fmt: skip


class CpuByKind:
    """CPU seconds of a cluster's processes by kind over a window: each child of the
    postmaster sampled every 0.1 s (its last sample counts), plus the CPU of the children
    the postmaster reaped meanwhile (cutime + cstime), which may overlap sampled ones."""

    def __init__(self, cluster: PgCluster) -> None:
        self.postmaster = postmaster_pid(cluster)
        self.start = children_ticks(self.postmaster)
        self.kinds: dict[int, str] = {}
        self.last: dict[int, int] = {}
        self.reaped0 = self._reaped()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _reaped(self) -> int:
        fields = proc_stat(self.postmaster)
        return int(fields[13]) + int(fields[14])

    def _kind(self, pid: int) -> str:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return "ended before its kind was read"
        return next((k for k in KINDS if k in cmd), "backend")

    def _sample(self) -> None:
        while not self._stop.wait(0.1):
            for pid, ticks in children_ticks(self.postmaster).items():
                if pid not in self.kinds:
                    self.kinds[pid] = self._kind(pid)
                self.last[pid] = ticks

    def stop(self) -> dict[str, float]:
        """Seconds per kind; `reaped` is the children that ended in the window."""
        self._stop.set()
        self._thread.join()
        for pid, ticks in children_ticks(self.postmaster).items():
            self.kinds.setdefault(pid, self._kind(pid))
            self.last[pid] = ticks
        by: collections.Counter[str] = collections.Counter()
        for pid, ticks in self.last.items():
            by[self.kinds[pid]] += ticks - self.start.get(pid, 0)
        by["reaped"] = self._reaped() - self.reaped0
        return {k: v / TICK for k, v in by.items()}


def _cpu_lines(cpu: dict[str, float], tasks: int) -> list[str]:
    lines = [
        "",
        "## CPU by process kind (the measured run; /proc)",
        "",
        "| process | CPU us/task |",
        "|---|---|",
    ]
    for kind, seconds in sorted(cpu.items(), key=lambda kv: -kv[1]):
        if kind != "reaped":
            lines.append(f"| {kind} | {seconds * 1e6 / tasks:,.1f} |")
    lines.append(
        f"| children reaped in the window (may overlap the rows above) | "
        f"{cpu.get('reaped', 0) * 1e6 / tasks:,.1f} |"
    )
    return lines


def _rows(cluster: PgCluster, db: str, sql: str) -> list[list[str]]:
    out = cluster.psql(f"COPY ({sql.strip()}) TO STDOUT WITH (FORMAT csv, DELIMITER '|')", db)
    return [row for row in csv.reader(io.StringIO(out), delimiter="|") if row]


def _report(
    cluster: PgCluster,
    db: str,
    tasks: int,
    batch: int,
    rate: float,
    top: int,
    cpu: dict[str, float] | None = None,
) -> str:
    per = 1e3 / tasks  # ms in total -> us per task
    statements = _rows(cluster, db, STATEMENTS)
    total_ms = sum(float(r[1]) for r in statements)
    plan_ms = sum(float(r[3]) for r in statements)
    lines = [
        f"# PostgreSQL statements, batch {batch}, {tasks:,} tasks ({rate:,.0f} tasks/s)",
        "",
        f"Execution time of all statements: {total_ms * per:,.1f} us per task (backend wall",
        "time inside the executor, nested trigger statements included, so rows overlap; not",
        "parse, plan or protocol). Planning, apart: "
        f"{plan_ms * per:,.1f} us per task (`plan us/task`; `plans/call` near 1 means a",
        "statement planned on every call, not once per connection).",
        "`python -m orch8bench.pgstat` reproduces this.",
        "",
        "| us/task | share | calls/task | plan us/task | plans/call | rows/call | blks hit/task "
        "| dirtied/task | WAL B/task | statement |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for calls, ms, plans, pms, nrows, hit, dirtied, wal, query in statements[:top]:
        c = int(calls)
        lines.append(
            f"| {float(ms) * per:,.1f} | {float(ms) / total_ms:.0%} | {c / tasks:.3f} "
            f"| {float(pms) * per:,.1f} | {int(plans) / max(c, 1):.2f} "
            f"| {int(nrows) / max(c, 1):.1f} | {int(hit) / tasks:.1f} | {int(dirtied) / tasks:.2f} "
            f"| {float(wal or 0) / tasks:,.0f} | `{query.replace('|', '/')}` |"
        )
    lines += [
        "",
        "## Tables (since the reset: the measured tasks only)",
        "",
        "| table | inserts/task | updates/task | HOT share | deletes/task | live | dead |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, ins, upd, hot, dele, live, dead in _rows(cluster, db, TABLES):
        u = int(upd)
        hot_share = f"{int(hot) / u:.0%}" if u else "-"
        lines.append(
            f"| {name} | {int(ins) / tasks:.2f} | {u / tasks:.2f} | {hot_share} "
            f"| {int(dele) / tasks:.2f} | {int(live):,} | {int(dead):,} |"
        )
    lines += [
        "",
        "## Indexes (size includes the warm-up's rows)",
        "",
        "| table | index | size | scans/task |",
        "|---|---|---|---|",
    ]
    for table, index, size, scans in _rows(cluster, db, INDEXES):
        lines.append(
            f"| {table} | {index} | {int(size) / 1024:,.0f} KiB | {int(scans) / tasks:.2f} |"
        )
    if cpu is not None:
        lines += _cpu_lines(cpu, tasks)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=30_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--keys", type=int, default=0, help="distinct concurrency keys (loadgen)")
    ap.add_argument("--key-limit", type=int, default=1, help="their max_concurrency")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--workflows",
        type=int,
        default=0,
        help="profile N 3-step workflow instances instead (figures per instance)",
    )
    ap.add_argument("--prefill", type=int, default=0,
                    help="tasks run through first (finished rows kept), as make bench's earlier phases")  # fmt: skip
    ap.add_argument("--pg-setting", action="append", default=[], metavar="NAME=VALUE",
                    help="another cluster setting (repeatable), e.g. autovacuum_naptime=5")  # fmt: skip
    a = ap.parse_args(argv)
    extra = pg_settings(ap, a.pg_setting)
    work = Workdir()
    cluster = PgCluster(fsync=True, settings={**SETTINGS, **extra}).init()
    try:
        db = "orch8"
        server = launch_server(cluster.create_database(db), work.path, "pgstat")
        try:
            shape = [f"-url={server.url}", f"-batch={a.batch}", "-producers=2", "-consumers=4",
                     f"-keys={a.keys}", f"-key-limit={a.key_limit}"]  # fmt: skip
            if a.prefill:
                log(f"pgstat: prefill of {a.prefill:,} tasks")
                loadgen("-mode=run", *shape, f"-n={a.prefill}")
            loadgen("-mode=run", *shape, f"-n={max(a.tasks // 10, a.batch)}")  # warm-up
            cluster.psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", db)
            cluster.psql("SELECT pg_stat_statements_reset(), pg_stat_reset()", db)
            sampler = CpuByKind(cluster)
            if a.workflows:
                from orch8bench.workflows import run_once  # its client is only needed here

                log(f"pgstat: {a.workflows:,} 3-step workflow instances")
                got = run_once(server.url, a.workflows, workers=2)
                out = {"tasks": a.workflows, "tasks_per_s": got["instances_per_s"]}
            else:
                log(f"pgstat: {a.tasks:,} tasks at batch {a.batch}")
                out = loadgen("-mode=run", *shape, f"-n={a.tasks}")
            cpu = sampler.stop()
        finally:
            server.stop()
        # After the stop: a backend sends its table and index counts when it ends (or at
        # most once a second while idle), so reading them earlier can miss the last ones.
        text = _report(cluster, db, out["tasks"], a.batch, out["tasks_per_s"], a.top, cpu)
        if a.workflows:  # the figures are per instance, not per task
            text = text.replace(" per task", " per instance").replace("/task", "/instance")
            text = text.replace(
                f"batch {a.batch}, {a.workflows:,} tasks",
                f"3-step workflows, {a.workflows:,} instances",
            )
        if a.prefill or extra:
            said = [f"after a prefill of {a.prefill:,} tasks"] if a.prefill else []
            said += [f"{k}={v}" for k, v in extra.items()]
            text = text.replace("\n", f" ({', '.join(said)})\n", 1)
        if a.keys:
            text = text.replace(
                f"batch {a.batch}, ",
                f"batch {a.batch}, {a.keys:,} keys of limit {a.key_limit}, ",
                1,
            )
        shutil.rmtree(work.path, ignore_errors=True)
    finally:
        cluster.destroy()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(text)
    print(text, flush=True)
    log(f"pgstat: written to {a.out}")
    return text


if __name__ == "__main__":
    main()
