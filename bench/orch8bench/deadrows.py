"""PostgreSQL pickup latency against the dead row versions a burst of tasks leaves behind.

    python -m orch8bench.deadrows [--tasks 150000] [--samples 200]

On a throwaway cluster (fsync on) with one server (working tree): pickup latency on the
fresh table, then `--tasks` run through at batch 100 (enqueue, claim, complete; finished
rows kept), pickup twice more, then a VACUUM of the tasks table and pickup once more.
Prints each pickup p50/p99 with the table's rows and dead row versions at that point. The
question it answers: how much of the bench's PostgreSQL pickup figure (measured right
after its throughput phases) is the not-yet-vacuumed table. `make bench` stays the
measurement of record.
"""

from __future__ import annotations

import argparse
import time

from orch8bench.env import PgCluster, Workdir, launch_server, loadgen, log
from orch8bench.run import table_rows


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=150_000)
    ap.add_argument("--samples", type=int, default=200)
    a = ap.parse_args(argv)
    work = Workdir()
    cluster = PgCluster(fsync=True).init()
    rows: list[dict] = []
    try:
        server = launch_server(cluster.create_database("orch8"), work.path, "deadrows")
        try:

            def pickup(stage: str) -> None:
                out = loadgen("-mode=latency", f"-url={server.url}", f"-poll-url={server.url}",
                              f"-n={a.samples}", "-warmup=5", on_line=lambda _: None)  # fmt: skip
                live, dead = table_rows(cluster, "orch8")
                rows.append({"stage": stage, "p50_ms": out["p50_ms"], "p99_ms": out["p99_ms"],
                             "live": live, "dead": dead})  # fmt: skip
                log(f"{stage}: pickup p50 {out['p50_ms']:.2f} ms, p99 {out['p99_ms']:.2f} ms; "
                    f"tasks table {live:,} rows, {dead:,} dead")  # fmt: skip

            pickup("fresh table")
            log(f"running {a.tasks:,} tasks through at batch 100")
            loadgen("-mode=run", f"-url={server.url}", "-batch=100", f"-n={a.tasks}",
                    "-producers=2", "-consumers=4", on_line=lambda _: None)  # fmt: skip
            pickup("after the burst")
            pickup("after the burst, again")
            started = time.monotonic()
            cluster.psql("VACUUM tasks", "orch8")
            log(f"VACUUM tasks: {time.monotonic() - started:.1f} s")
            pickup("after VACUUM")
        finally:
            server.stop()
    finally:
        cluster.destroy()
    return rows


if __name__ == "__main__":
    main()
