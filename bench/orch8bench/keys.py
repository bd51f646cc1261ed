"""What concurrency keys cost (issue 33, P-KEY-1..6): the end-to-end batch-100 row of
`make bench` with keys off, with 1,000 distinct keys (limit 10) and with one hot key
(limit 200), on each backend.

    python -m orch8bench.keys [--backend sqlite|postgresql|both] [--n 20000] [--reps 3]

Each row has a fresh server on a fresh database (SQLite file, or a database of one
throwaway PostgreSQL cluster), kept for its repetitions; the rows run in interleaved
rounds (off, 1,000 keys, hot, off, ...) so a drift of the machine's load hits all three
alike, and each figure is the median of its rounds. The load client is the one of the
batch-100 row (`env.e2e_args`: 2 producers, 4 consumers, warm-up first) with `-keys N
-key-limit M`: task i carries `concurrency_key` "k<i % N>" and `max_concurrency` M.

- 1,000 keys, limit 10: up to 10,000 slots, never full; each batch of 100 names 100
  keys, so an enqueue and a completion each admit up to 100 keys (on PostgreSQL an
  advisory lock and an admission statement per key).
- One hot key, limit 200: every task queues for the one key. A completion frees its
  slots and admits as many held tasks in its own transaction; on PostgreSQL every
  enqueue and completion takes the key's one advisory lock. At most 200 tasks of the key
  are claimable or running, while 4 consumers claiming 100 each could hold 400: whether
  the limit throttles shows in the claims per 1,000 tasks (10 when every claim is full).

Figures per row: tasks/s, the server's CPU microseconds per task over the load client's
measured window, PostgreSQL's (every process of the cluster, so the two idle servers'
sweeps too) likewise, claims (polls answered) per 1,000 tasks, and the ratios to keys off
of the same backend in the same run. Written to bench/results/ (`--out`).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from orch8bench import report
from orch8bench.env import (
    BENCH,
    PgCluster,
    RunningServer,
    Workdir,
    cluster_cpu_seconds,
    e2e_args,
    launch_server,
    loadavg,
    loadgen_window,
    log,
    machine,
    revisions,
)
from orch8bench.measure import interleaved

BATCH = 100
# (distinct keys, max_concurrency) per row; 0 keys = no concurrency_key (today's requests)
ROWS = {"keys off": (0, 0), "1,000 keys, limit 10": (1000, 10), "one hot key, limit 200": (1, 200)}
BACKENDS = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def measure(
    backend: str, n: int, warmup: int, reps: int, work: Workdir, cluster: PgCluster | None
) -> list[dict]:
    """The three rows on one backend (`cluster` for PostgreSQL), interleaved."""
    db = functools.partial(cluster_cpu_seconds, cluster) if cluster else None
    name = BACKENDS[backend]
    servers: dict[str, RunningServer] = {}
    try:
        for i, label in enumerate(ROWS):
            stem = f"keys_{i}_{time.time_ns()}"
            target = cluster.create_database(stem) if cluster else work.sqlite(stem)
            servers[label] = launch_server(target, work.path, stem)
        onces = {}
        for label, (keys, limit) in ROWS.items():
            s = servers[label]
            args = e2e_args(s.url, BATCH, n, warmup)
            if keys:
                args += [f"-keys={keys}", f"-key-limit={limit}"]
            onces[f"{name}, {label}"] = functools.partial(_once, s.process.pid, args, db)
        log(f"concurrency keys, {name}: {', '.join(ROWS)}, {reps} interleaved rounds of {n:,}")
        rows = interleaved(onces, reps)
    finally:
        for s in servers.values():
            s.stop()
    for (keys, limit), row in zip(ROWS.values(), rows.values(), strict=True):
        row.update(backend=name, keys=keys, key_limit=limit, batch=BATCH, tasks=n)
    return list(rows.values())


def _once(pid: int, args: list[str], db: Callable[[], float] | None) -> dict:
    out = loadgen_window(pid, *args, db=db)
    out["polls_per_1000"] = round(out["polls"] / out["tasks"] * 1000, 1)
    return out


def phase(backend: str, cfg: dict, work: Workdir, cluster: PgCluster | None) -> list[dict]:
    """`make bench`'s rows (run.py): a failure costs this backend's rows, not the run."""
    try:
        return measure(backend, cfg["keys_tasks"], cfg["keys_warmup"], cfg["reps"], work, cluster)
    except (RuntimeError, OSError) as exc:
        log(f"  concurrency keys, {BACKENDS[backend]} FAILED: {exc}")
        return [
            {"backend": BACKENDS[backend], "label": BACKENDS[backend], "error": str(exc)[-500:]}
        ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    ap.add_argument("--n", type=int, default=20_000, help="measured tasks per run")
    ap.add_argument("--warmup", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="markdown file (a .json beside it)")
    a = ap.parse_args()
    backends = list(BACKENDS) if a.backend == "both" else [a.backend]
    res: dict = {"machine": machine(), "revisions": revisions(), "load_start": loadavg(),
                 "n": a.n, "warmup": a.warmup, "reps": a.reps, "keys": []}  # fmt: skip
    started = time.time()
    work = Workdir()
    for backend in backends:
        cluster = PgCluster(fsync=True).init() if backend == "postgresql" else None
        try:
            res["keys"] += measure(backend, a.n, a.warmup, a.reps, work, cluster)
        finally:
            if cluster is not None:
                cluster.destroy()
    res.update(load_end=loadavg(), duration_s=round(time.time() - started),
               date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))  # fmt: skip
    shutil.rmtree(work.path, ignore_errors=True)
    # Not the committed results/<date>-concurrency-keys.md: its findings are written by hand.
    day = time.strftime("%Y-%m-%d", time.gmtime())
    out = a.out or BENCH / "results" / f"{day}-{res['machine']['host']}-keys.md"
    text = render(res, f"python -m orch8bench.keys --backend {a.backend} --n {a.n} "
                  f"--warmup {a.warmup} --reps {a.reps}")  # fmt: skip
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps(res, indent=1))
    print(text, flush=True)
    log(f"written to {out}")


def render(res: dict, command: str) -> str:
    m = res["machine"]
    return "\n".join([
        f"# Concurrency keys: what they cost ({res['date']})",
        "",
        f"`cd bench && .venv/bin/python -m {command.removeprefix('python -m ')}`, "
        f"{res['duration_s']} s on {m['host']} ({m['cores']} cores, {m['cpu']}); server "
        f"{res['revisions'].get('server', 'n/a')}. Load average (1, 5, 15 min) at start "
        f"{res['load_start']}, at end {res['load_end']}.",
        "",
        *report.keys_lines(res["keys"]),
    ])  # fmt: skip


if __name__ == "__main__":
    os.chdir(BENCH)
    main()
