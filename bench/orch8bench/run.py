"""`make bench [QUICK=1]`: every measurement of bench/README.md, then the report.

Each phase prints progress; results go to bench/results/<date>-<host>.{md,json}.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from orch8bench import keys, report
from orch8bench.before import BASELINE_REV
from orch8bench.env import (
    BENCH,
    SERVER_PYTHON,
    SHAPE,
    PgCluster,
    RunningServer,
    Workdir,
    cluster_cpu_seconds,
    e2e_args,
    launch_server,
    loadavg,
    loadgen,
    loadgen_window,
    log,
    machine,
    revisions,
    rss_mb,
    start_minimal,
    start_stub,
)
from orch8bench.measure import repeat
from orch8bench.sdks import SDK_CONCURRENCY, sdks
from orch8bench.workflows import run_once as workflow_once

BATCHES = (1, 10, 50, 100)
PY = str(BENCH / ".venv" / "bin" / "python")
NODE_PEERS = {"pg-boss": "pgboss.mjs", "graphile-worker": "graphile.mjs"}
# River runs as a Go program (bench/river, built by `make -C bench setup-bench`).
RIVER = BENCH / ".bin" / "river"
PEERS = ("pgqueuer", "procrastinate", "pg-boss", "graphile-worker", "river")

QUICK = {
    "reps": 3,
    "tasks": {1: 300, 10: 1000, 50: 2000, 100: 2000},
    "warmup": 200,
    "latency_samples": 30,
    "rss_tasks": 20_000,
    "sdk_tasks": {"raw": 500, "Python": 300, "TypeScript": 500, "Go": 500},
    "peer_tasks": {
        "pgqueuer": 1000,
        "procrastinate": 100,
        "pg-boss": 300,
        "graphile-worker": 500,
        "river": 2000,
    },
    "peer_warmup": 50,
    "stub_tasks": {1: 10_000, 100: 100_000},
    "wf_instances": 200,
    "keys_tasks": 2000,
    "keys_warmup": 200,
}
FULL = {
    "reps": 3,
    "tasks": {1: 6000, 10: 20_000, 50: 40_000, 100: 50_000},
    "warmup": 3000,
    "latency_samples": 300,
    "rss_tasks": 1_000_000,
    # The same count for every SDK: in a short run the first parked poll and the last
    # batch weigh more (Python's row at 3,000 tasks read ~30% below its rate at 20,000).
    "sdk_tasks": {"raw": 20_000, "Python": 20_000, "TypeScript": 20_000, "Go": 20_000},
    "peer_tasks": {
        "pgqueuer": 20_000,
        "procrastinate": 2000,
        "pg-boss": 10_000,
        "graphile-worker": 10_000,
        "river": 20_000,
    },
    "peer_warmup": 500,
    "stub_tasks": {1: 50_000, 100: 1_000_000},
    "wf_instances": 2000,
    # Concurrency keys (keys.py), 3 rows x reps per backend: at 10,000 tasks a run the phase
    # took 3 min at load 7-12 (PostgreSQL's 1,000 keys alone ~490 tasks/s); 6,000 keeps it
    # under ~2 min on a loaded machine, ~40 s on an idle one.
    "keys_tasks": 6000,
    "keys_warmup": 600,
}


def throughput(
    url: str, batch: int, cfg: dict, pid: int, label: str, db: Callable[[], float] | None = None
) -> dict:
    """One end-to-end row; `db`: the database's CPU clock (PostgreSQL rows)."""
    prod, cons = SHAPE[batch]
    args = e2e_args(url, batch, cfg["tasks"][batch], cfg["warmup"])
    row = repeat(label, cfg["reps"], lambda: loadgen_window(pid, *args, db=db))
    row.update(batch=batch, tasks=cfg["tasks"][batch], producers=prod, consumers=cons)
    return row


def two_replicas(servers: list[RunningServer], batch: int, cfg: dict) -> dict:
    """Scale-out: one load client per replica at once, half the tasks each; the rate is
    all tasks over the slower client's time."""
    n = cfg["tasks"][batch] // len(servers)
    prod, cons = SHAPE[batch]

    def client(i: int) -> dict:
        # Its own handler name: each client claims only the tasks it enqueued, so each
        # one's count of completions reaches its own n (replicas share one database).
        s = servers[i]
        return loadgen(
            "-mode=run", f"-url={s.url}", f"-batch={batch}", f"-n={n}", f"-handler=noop_{i}",
            f"-warmup={cfg['warmup'] // len(servers)}", f"-producers={prod}",
            f"-consumers={cons}", on_line=lambda _: None,
        )  # fmt: skip

    def once() -> dict:
        with ThreadPoolExecutor(len(servers)) as pool:
            outs = list(pool.map(client, range(len(servers))))
        secs = max(o["seconds"] for o in outs)
        return {"tasks_per_s": n * len(servers) / secs, "seconds": secs}

    row = repeat(f"PostgreSQL batch {batch}, {len(servers)} replicas", cfg["reps"], once)
    row.update(batch=batch, tasks=n * len(servers), replicas=len(servers))
    return row


def workflows(
    url: str, cfg: dict, pid: int, label: str, db_cpu: Callable[[], float] | None = None
) -> dict:
    """Issue 16: 3-step instances completed per second (orch8bench/workflows.py); with
    `db_cpu` (PostgreSQL's CPU clock) the database's CPU per step task too."""
    n = cfg["wf_instances"]

    def once() -> dict:
        db0 = db_cpu() if db_cpu else 0.0
        out = workflow_once(url, n)
        if db_cpu:
            out["db_cpu_s"] = db_cpu() - db0
        return out

    row = repeat(label, cfg["reps"], once, "instances_per_s", pid)
    row.update(instances=n, steps=3)
    return row


def latency(enqueue_url: str, poll_url: str, cfg: dict, label: str) -> dict:
    before = loadavg()
    out = loadgen(
        "-mode=latency", f"-url={enqueue_url}", f"-poll-url={poll_url}",
        f"-n={cfg['latency_samples']}", "-warmup=5",
    )  # fmt: skip
    out.update(label=label, load_before=before, load_after=loadavg())
    log(
        f"  {label}: p50 {out['p50_ms']:.2f} ms, p99 {out['p99_ms']:.2f} ms, max {out['max_ms']:.2f} ms"
    )
    return out


def settle(cluster: PgCluster, dbname: str, limit_s: float = 180) -> dict:
    """Let PostgreSQL finish the previous phases' background work before pickup latency is
    measured (a waiting long-poll on an otherwise idle server): a CHECKPOINT, then no
    autovacuum worker running, polled every 0.5 s up to `limit_s`. Also returns how many
    rows and dead row versions (not yet vacuumed) the tasks table then holds: a claim
    walks past dead entries of the pending index."""
    started = time.monotonic()
    cluster.psql("CHECKPOINT")
    checkpoint_s = time.monotonic() - started
    seen: set[str] = set()
    query = (
        "SELECT coalesce(string_agg(query, '; '), '') FROM pg_stat_activity "
        "WHERE backend_type = 'autovacuum worker'"
    )
    while time.monotonic() - started < limit_s:
        running = cluster.psql(query)
        if not running:
            break
        seen.update(q.strip() for q in running.split(";") if q.strip())
        time.sleep(0.5)
    else:
        log(f"  PostgreSQL still busy after {limit_s:.0f} s: {sorted(seen)}")
    live, dead = table_rows(cluster, dbname)
    out = {"settle_s": round(time.monotonic() - started, 1), "checkpoint_s": round(checkpoint_s, 1),
           "autovacuum": sorted(seen), "tasks_live": live, "tasks_dead": dead}  # fmt: skip
    log(
        f"  settled in {out['settle_s']} s (CHECKPOINT {out['checkpoint_s']} s; autovacuum "
        f"{out['autovacuum'] or 'none'}); tasks: {live:,} rows, {dead:,} dead"
    )
    return out


def table_rows(cluster: PgCluster, dbname: str) -> tuple[int, int]:
    """The tasks table's rows and dead row versions (not yet vacuumed), from its stats."""
    live, dead, _ = _table_stats(cluster, dbname)
    return live, dead


def _table_stats(cluster: PgCluster, dbname: str) -> tuple[int, int, int]:
    """Rows, dead row versions and vacuums so far (auto or manual) of the tasks table."""
    live, dead, vacuums = cluster.psql(
        "SELECT n_live_tup, n_dead_tup, autovacuum_count + vacuum_count "
        "FROM pg_stat_user_tables WHERE relname = 'tasks'",
        dbname,
    ).split("|")
    return int(live), int(dead), int(vacuums)


def await_vacuum(cluster: PgCluster, dbname: str, limit_s: float = 180) -> dict:
    """Wait until autovacuum has removed the dead row versions the throughput phases left
    in the tasks table: its dead rows within autovacuum's own threshold for the table
    (50 + 1% of its rows, the storage parameter of the server's schema), or one more
    vacuum of it finished. Autovacuum looks at each database once per
    `autovacuum_naptime` (1 min, PostgreSQL's default, kept), so this takes up to a
    minute after a burst. Nothing is vacuumed here: the wait is for what a deployment on
    PostgreSQL's defaults does by itself."""
    started = time.monotonic()
    live, dead, vacuums = _table_stats(cluster, dbname)
    dead_before = dead
    vacuumed = dead <= 50 + 0.01 * live
    while not vacuumed and time.monotonic() - started < limit_s:
        time.sleep(1)
        live, dead, count = _table_stats(cluster, dbname)
        vacuumed = count > vacuums or dead <= 50 + 0.01 * live
    waited = round(time.monotonic() - started, 1)
    out = {"waited_s": waited, "dead_before": dead_before, "live": live, "dead": dead,
           "vacuumed": vacuumed}  # fmt: skip
    log(
        f"  waited {waited} s for autovacuum of tasks: {dead_before:,} -> {dead:,} dead "
        f"({live:,} rows){'' if out['vacuumed'] else ', NOT vacuumed within the limit'}"
    )
    return out


def client_ceiling(cfg: dict) -> list[dict]:
    """The load client against a canned-answer stub: the most it can drive here."""
    rows = []
    for batch, n in cfg["stub_tasks"].items():
        stub, stub_url = start_stub(batch)
        try:
            prod, cons = SHAPE[batch]
            args = ["-mode=run", f"-url={stub_url}", f"-batch={batch}", f"-n={n}",
                    f"-producers={prod}", f"-consumers={cons}"]  # fmt: skip
            row = repeat(f"client ceiling, batch {batch}", 1, lambda a=args: loadgen(*a))
            row["batch"] = batch
            rows.append(row)
        finally:
            stub.terminate()
            stub.wait()
    return rows


def rss_drain(work: Workdir, cfg: dict) -> dict:
    """Fill rss_tasks, then drain them at batch 100, sampling the server's RSS."""
    n = cfg["rss_tasks"]
    server = launch_server(work.sqlite("rss"), work.path, "rss")
    try:
        log(f"RSS: enqueueing {n:,} tasks")
        before = loadavg()
        fill = loadgen("-mode=fill", f"-url={server.url}", f"-n={n}", "-producers=2",
                       on_line=lambda _: None)  # fmt: skip
        log(f"  filled at {fill['tasks_per_s']:,.0f} tasks/s; draining with RSS sampling")
        rss_start, _ = rss_mb(server.process.pid)
        samples: list[dict] = []
        progress = {"done": 0}
        stop = threading.Event()
        t0 = time.perf_counter()

        def sample() -> None:  # every 0.25 s, whatever the client prints
            while not stop.wait(0.25):
                cur, _ = rss_mb(server.process.pid)
                samples.append({"t": round(time.perf_counter() - t0, 2),
                                "done": progress["done"], "rss_mb": round(cur, 1)})  # fmt: skip

        def on_line(line: str) -> None:
            print(line, flush=True)
            if "done" in line:  # "drain batch 100: 1234/5000 done, 999 tasks/s"
                progress["done"] = int(line.split(":")[1].split("/")[0])

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            drain = loadgen("-mode=drain", f"-url={server.url}", f"-n={n}", "-batch=100",
                            "-consumers=4", on_line=on_line)  # fmt: skip
        finally:
            stop.set()
            sampler.join()
        rss_end, peak = rss_mb(server.process.pid)
    finally:
        server.stop()
    return {
        "tasks": n, "fill_tasks_per_s": fill["tasks_per_s"], "drain_tasks_per_s": drain["tasks_per_s"],
        "rss_start_mb": round(rss_start, 1), "rss_end_mb": round(rss_end, 1), "peak_mb": round(peak, 1),
        "samples": samples, "load_before": before, "load_after": loadavg(),
    }  # fmt: skip


def limit_or_error(kind: str, *args: Any) -> dict:
    """`limit(kind, *args)`; one broken limit row must not lose the whole run."""
    try:
        return limit(kind, *args)
    except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
        log(f"  physical limit, {kind} FAILED: {exc}")
        return {"error": str(exc)[-500:]}


def limit(
    kind: str,
    db: Callable[[str], str],
    cfg: dict,
    work: Workdir,
    db_cpu: Callable[[], float] | None = None,
) -> dict[str, list]:
    """The physical limit, in the same run as the server: the minimal table over HTTP (one
    process for every batch size, its table growing like the server's) and by bare SQL.
    `db_cpu`: PostgreSQL's CPU clock, for its CPU per task beside each row."""
    http_rows = []
    proc, url = start_minimal(db("minimal_http"), work.path, kind)
    try:
        for b in BATCHES:
            log(f"minimal HTTP loop, {kind}, batch {b}")
            http_rows.append(
                throughput(url, b, cfg, proc.pid, f"minimal HTTP {kind} batch {b}", db_cpu)
            )
    finally:
        proc.terminate()
        proc.wait(30)
    sql_rows = []
    for b in BATCHES:
        n, target = cfg["tasks"][b], db(f"minimal_sql_{b}")

        def once(b: int = b, n: int = n, target: str = target) -> dict:
            warmup = min(cfg["warmup"], n)
            db0 = db_cpu() if db_cpu else 0.0
            out = subprocess.run(
                [str(SERVER_PYTHON), "-m", "orch8bench.minimal", kind, target, f"--batch={b}",
                 f"--tasks={n}", f"--warmup={warmup}"],
                capture_output=True, text=True, cwd=BENCH, check=True,
            )  # fmt: skip
            got = json.loads(out.stdout)
            if db_cpu:  # around the whole call: setup and warm-up included
                got.update(db_cpu_s=db_cpu() - db0, db_tasks=n + warmup)
            return got

        log(f"minimal table, bare SQL, {kind}, batch {b}")
        row = repeat(f"minimal SQL {kind} batch {b}", cfg["reps"], once)
        row.update(batch=b, tasks=n)
        sql_rows.append(row)
    return {"http": http_rows, "sql": sql_rows}


def peer_command(peer: str, url: str, n: int, w: int) -> list[str]:
    """The command of one peer run; each prints one JSON line (peers.py's answer)."""
    if peer in NODE_PEERS:
        return ["node", str(BENCH / "node" / NODE_PEERS[peer]), url, str(n), str(w)]
    if peer == "river":
        return [str(RIVER), url, str(n), str(w)]
    return [PY, "-m", "orch8bench.peers", peer, url, f"--tasks={n}", f"--warmup={w}"]


def peers(cluster: PgCluster, cfg: dict, names: tuple[str, ...] = PEERS) -> list[dict]:
    rows = []
    for peer in names:
        n, w = cfg["peer_tasks"][peer], cfg["peer_warmup"]
        log(f"peer {peer}: {n:,} jobs per run")

        def once(peer: str = peer, n: int = n, w: int = w) -> dict:
            url = cluster.create_database(f"peer_{peer.replace('-', '')}_{time.time_ns()}")
            cmd = peer_command(peer, url, n, w)
            db0 = cluster_cpu_seconds(cluster)
            out = subprocess.run(cmd, capture_output=True, text=True, cwd=BENCH, timeout=900)
            if out.returncode != 0:
                raise RuntimeError(out.stderr[-2000:])
            got = json.loads(out.stdout.strip().splitlines()[-1])
            # PostgreSQL's CPU around the whole run (schema setup and warm-up included)
            got.update(db_cpu_s=cluster_cpu_seconds(cluster) - db0, db_tasks=n + w)
            return got

        try:
            row = repeat(f"peer {peer}", cfg["reps"], once)
            row.update(peer=peer, tasks=n, settings=row["details"][0].get("settings"))
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
            log(f"  {peer} FAILED: {exc}")
            row = {"peer": peer, "label": f"peer {peer}", "error": str(exc)[-500:]}
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma list of phases (debugging)")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma list of peers (peer phase)")
    a = ap.parse_args()
    cfg = QUICK if a.quick else FULL
    peer_names = tuple(a.peers.split(","))
    if set(peer_names) - set(PEERS):
        ap.error(f"--peers: a comma list of {', '.join(PEERS)}")
    phases = (
        set(a.only.split(","))
        if a.only
        else {"ceiling", "sqlite", "sdk", "pg", "peers", "rss", "workflows", "keys"}
    )
    started = time.time()
    res: dict = {"quick": a.quick, "settings": cfg | {"tasks": {str(k): v for k, v in cfg["tasks"].items()},
                 "stub_tasks": {str(k): v for k, v in cfg["stub_tasks"].items()}},
                 "shape": {str(k): v for k, v in SHAPE.items()}, "sdk_concurrency": SDK_CONCURRENCY,
                 "sdk_baseline": BASELINE_REV[:7]}  # fmt: skip
    res["partial"] = bool(a.only) or peer_names != PEERS
    res["machine"] = machine()
    res["revisions"] = revisions()  # what the server and SDK rows measured
    res["load_start"] = loadavg()
    log(
        f"bench ({'QUICK' if a.quick else 'full'}) on {res['machine']['host']}, load {res['load_start']}"
    )
    work = Workdir()
    log(f"workdir {work.path}")

    if "ceiling" in phases:
        log("load client ceiling (canned-answer stub)")
        res["client_ceiling"] = client_ceiling(cfg)

    if phases & {"sqlite", "sdk", "workflows"}:
        server = launch_server(work.sqlite("main"), work.path, "sqlite")
        try:
            if "sqlite" in phases:
                res["sqlite"] = []
                for b in BATCHES:
                    log(f"SQLite end to end, batch {b}")
                    res["sqlite"].append(
                        throughput(server.url, b, cfg, server.process.pid, f"SQLite batch {b}")
                    )
                log("SQLite pickup latency")
                res["latency_sqlite"] = latency(server.url, server.url, cfg, "SQLite")
            if "sdk" in phases:
                res["sdk"], res["sdk_telemetry"] = sdks(server, cfg, work.path)
            if "workflows" in phases:
                log("SQLite workflows, 3-step instances")
                res["wf_sqlite"] = workflows(server.url, cfg, server.process.pid, "SQLite 3-step")
        finally:
            server.stop()
        if "sqlite" in phases:
            res["limit_sqlite"] = limit_or_error("sqlite", work.sqlite, cfg, work)
    if "keys" in phases:
        res["keys"] = keys.phase("sqlite", cfg, work, None)

    if phases & {"pg", "peers", "workflows", "keys"}:
        log("starting a throwaway PostgreSQL cluster (fsync on)")
        cluster = PgCluster(fsync=True).init()
        try:
            if "pg" in phases:
                url = cluster.create_database("orch8")
                db_cpu = functools.partial(cluster_cpu_seconds, cluster)
                a_srv = launch_server(url, work.path, "pg-a")
                b_srv = launch_server(url, work.path, "pg-b")
                try:
                    res["pg"] = []
                    for b in BATCHES:
                        log(f"PostgreSQL end to end, batch {b}")
                        res["pg"].append(
                            throughput(
                                a_srv.url, b, cfg, a_srv.process.pid, f"PostgreSQL batch {b}",
                                db_cpu,
                            )
                        )  # fmt: skip
                    log("PostgreSQL end to end, batch 100, two replicas (one client each)")
                    res["pg_replicas"] = two_replicas([a_srv, b_srv], 100, cfg)
                    log("PostgreSQL pickup latency, once the database settled")
                    res["pg_settle"] = settle(cluster, "orch8")
                    res["latency_pg_burst"] = latency(
                        a_srv.url, a_srv.url, cfg, "PostgreSQL, right after the burst"
                    )
                    log("PostgreSQL pickup latency, once autovacuum has run on tasks")
                    res["pg_vacuum"] = await_vacuum(cluster, "orch8")
                    res["latency_pg"] = latency(a_srv.url, a_srv.url, cfg, "PostgreSQL")
                    res["latency_pg_cross"] = latency(
                        a_srv.url, b_srv.url, cfg, "PostgreSQL, enqueue on A, poll on B"
                    )
                finally:
                    a_srv.stop()
                    b_srv.stop()
                res["limit_pg"] = limit_or_error(
                    "postgresql", cluster.create_database, cfg, work, db_cpu
                )
            if "workflows" in phases:
                log("PostgreSQL workflows, 3-step instances")
                wf_srv = launch_server(cluster.create_database("orch8_wf"), work.path, "pg-wf")
                try:
                    res["wf_pg"] = workflows(
                        wf_srv.url, cfg, wf_srv.process.pid, "PostgreSQL 3-step",
                        functools.partial(cluster_cpu_seconds, cluster),
                    )  # fmt: skip
                finally:
                    wf_srv.stop()
            if "keys" in phases:
                res["keys"] += keys.phase("postgresql", cfg, work, cluster)
            if "peers" in phases:
                res["peers"] = peers(cluster, cfg, peer_names)
        finally:
            cluster.destroy()

    if "rss" in phases:
        res["rss"] = rss_drain(work, cfg)

    res["load_end"] = loadavg()
    res["duration_s"] = round(time.time() - started)
    md, js = report.write(res, BENCH / "results")
    shutil.rmtree(work.path, ignore_errors=True)  # databases and logs; kept when a run fails
    log(f"done in {res['duration_s']} s: {md} and {js}")
    print(Path(md).read_text().split("\n## ", 2)[1] if "\n## " in Path(md).read_text() else "")


if __name__ == "__main__":
    os.chdir(BENCH)
    sys.exit(main())
