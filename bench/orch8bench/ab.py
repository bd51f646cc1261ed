"""A/B of two server revisions on this machine, runs interleaved (A, B, A, B, ...), so a
load that changes during the comparison hits both alike. Prints per batch size the median
tasks/s and the server's CPU microseconds per task (over the client's measured window),
the figure a code change moves even when other processes share the cores; on PostgreSQL
also the database's own CPU microseconds per task (all its processes).

    python -m orch8bench.ab --before 7652e05 [--after REV] --backend sqlite|postgresql
        [--batches 1,100] [--reps 3] [--latency 200] [--workflows 600]

`--latency N` also measures pickup latency (enqueue to the parked poll's answer, the
bench's latency mode) with N samples per run, interleaved the same way; `--batches ""`
measures latency only. `--workflows N` measures the bench's 3-step workflow row (N
instances a run, 2 workers): instances/s and CPU microseconds per instance, started
`--start-batches` instances per request (default 100, `POST /instances/batch`, P-WF-14;
`1` starts each with `POST /instances`, as revisions before contract 1.12.0 need; `1,100`
measures both).

A revision is exported with `git archive` into a temp dir and run from there (PYTHONPATH);
without --after, the working tree runs as B. Same launcher, load client and shapes as
`make bench`.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from orch8bench.env import (
    REPO,
    SERVER_PYTHON,
    PgCluster,
    RunningServer,
    cluster_cpu_seconds,
    cpu_seconds,
    loadavg,
    loadgen,
    loadgen_window,
    log,
    start_server,
)

COUNTS = {1: (3000, 4, 8), 10: (20_000, 2, 4), 50: (30_000, 2, 4), 100: (30_000, 2, 4)}


def export(rev: str, into: Path) -> str:
    """`git archive REV server/orch8_server` under `into`; returns the PYTHONPATH entry."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "server/orch8_server"],
        capture_output=True, check=True,
    )  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return str(into / "server")


def launch(db: str, workdir: Path, name: str, pythonpath: str | None) -> RunningServer:
    env = {"PYTHONPATH": pythonpath} if pythonpath else {}
    check = subprocess.run(
        [str(SERVER_PYTHON), "-c", "import orch8_server; print(orch8_server.__file__)"],
        capture_output=True, text=True, env={**env, "PATH": "/usr/bin:/bin"}, cwd=workdir,
    )  # fmt: skip
    log(f"{name}: orch8_server from {check.stdout.strip()}")
    return start_server(
        "--log-level", "warning", db=db, log=workdir / f"{name}.log",
        python=str(SERVER_PYTHON), env=env, timeout=60,
    )  # fmt: skip


def alternate(
    servers: dict[str, RunningServer], reps: int, measure: Callable[[RunningServer], tuple]
) -> dict[str, list[tuple]]:
    """`measure` on each server in turn (A, B, A, B, ...), `reps` rounds: per server label,
    its runs' figures."""
    runs: dict[str, list[tuple]] = {label: [] for label in servers}
    for _ in range(reps):
        for label, s in servers.items():
            runs[label].append(measure(s))
    return runs


def report(what: str, runs: dict[str, list[tuple]], fields: list[tuple[str, str]]) -> None:
    """One line per server: the median of each figure (name, format) and the runs."""
    for label, got in runs.items():
        medians = ", ".join(
            f"{format(statistics.median(run[i] for run in got), fmt)} {name}"
            for i, (name, fmt) in enumerate(fields)
        )
        shown = [tuple(round(x, 2) for x in run) for run in got]
        print(f"{what} {label}: {medians} (runs {shown}), load {loadavg()[0]}", flush=True)


def pickup(s: RunningServer, samples: int) -> tuple[float, float]:
    out = loadgen("-mode=latency", f"-url={s.url}", f"-poll-url={s.url}", f"-n={samples}",
                  "-warmup=5")  # fmt: skip
    return out["p50_ms"], out["p99_ms"]


def throughput(
    s: RunningServer, batch: int, db: Callable[[], float] | None = None
) -> tuple[float, ...]:
    """tasks/s and server CPU us/task; with `db` (PostgreSQL), its CPU us/task too."""
    n, producers, consumers = COUNTS[batch]
    out = loadgen_window(
        s.process.pid, "-mode=run", f"-url={s.url}", f"-batch={batch}", f"-n={n}",
        f"-warmup={n // 10}", f"-producers={producers}", f"-consumers={consumers}", db=db,
    )  # fmt: skip
    got = (out["tasks_per_s"], out["cpu_s"] / out["tasks"] * 1e6)
    return got if db is None else (*got, out["db_cpu_s"] / out["tasks"] * 1e6)


def workflows(
    s: RunningServer, instances: int, start_batch: int, db: Callable[[], float] | None = None
) -> tuple[float, ...]:
    """instances/s of the bench's 3-step workflow and server CPU us per instance (with
    `db`, PostgreSQL's too)."""
    from orch8bench.workflows import run_once  # its client is only needed here

    c0, d0 = cpu_seconds(s.process.pid), db() if db else 0.0
    out = run_once(s.url, instances, workers=2, start_batch=start_batch)
    cpu = (cpu_seconds(s.process.pid) - c0) / instances * 1e6
    got = (out["instances_per_s"], cpu)
    return got if db is None else (*got, (db() - d0) / instances * 1e6)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="git revision run as A")
    ap.add_argument("--after", default=None, help="git revision run as B (default: working tree)")
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    ap.add_argument("--batches", default="1,100")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--latency", type=int, default=0, help="pickup samples per run (0: none)")
    ap.add_argument("--workflows", type=int, default=0, help="3-step instances per run (0: none)")
    ap.add_argument(
        "--start-batches", default="100", help="instances per start request, e.g. 1,100"
    )
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="orch8-ab-"))
    cluster = PgCluster(fsync=True).init() if a.backend == "postgresql" else None
    servers: dict[str, RunningServer] = {}
    try:
        for label, rev in (("A " + a.before, a.before), ("B " + (a.after or "tree"), a.after)):
            path = export(rev, work / label.split()[0]) if rev else None
            name = label.split()[0]
            db = (
                cluster.create_database(f"ab_{name.lower()}")
                if cluster
                else str(work / f"{name}.db")
            )
            servers[label] = launch(db, work, name, path)
        if a.latency:
            runs = alternate(servers, a.reps, lambda s: pickup(s, a.latency))
            report(f"{a.backend} pickup", runs, [("ms p50", ".2f"), ("ms p99", ".2f")])
        db = functools.partial(cluster_cpu_seconds, cluster) if cluster else None
        columns = [("tasks/s", ",.0f"), ("server CPU us/task", ",.0f")]
        if db is not None:
            columns.append(("PostgreSQL CPU us/task", ",.0f"))
        if a.workflows:
            wf_columns = [("instances/s", ",.0f"), ("server CPU us/instance", ",.0f")]
            if db is not None:
                wf_columns.append(("PostgreSQL CPU us/instance", ",.0f"))
            for k in (int(b) for b in a.start_batches.split(",")):
                runs = alternate(servers, a.reps, lambda s, k=k: workflows(s, a.workflows, k, db))
                report(f"{a.backend} 3-step workflows, {k} per start request", runs, wf_columns)
        for batch in (int(b) for b in a.batches.split(",") if b):
            runs = alternate(servers, a.reps, lambda s, b=batch: throughput(s, b, db))
            report(f"{a.backend} batch {batch}", runs, columns)
    finally:
        for s in servers.values():
            s.stop()
        if cluster is not None:
            cluster.destroy()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
