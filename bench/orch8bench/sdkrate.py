"""One SDK Worker alone on a fresh SQLite server: the quick check of an SDK change.

    python -m orch8bench.sdkrate Python|TypeScript|Go [--reps 5] [--tasks 20000]

Starts the server (working tree) and the SDK's bench worker program (bench/sdk/,
concurrency 100, no-op handler), warms up, then times `--reps` fill + drain runs as the
bench's SDK phase does (orch8bench/sdks.py) and prints each run and the medians of
tasks/s, the worker's and the server's CPU microseconds per task. No peers, no report:
`make bench` stays the measurement of record.
"""

from __future__ import annotations

import argparse
import statistics

from orch8bench import sdks
from orch8bench.env import Workdir, cpu_seconds, launch_server, log


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sdk", choices=("Python", "TypeScript", "Go"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=20_000)
    a = ap.parse_args()
    work = Workdir()
    server = launch_server(work.sqlite("rate"), work.path, "rate")
    handler = "noop_rate"
    cmd = sdks.worker_cmd(a.sdk, server.url, str(sdks.SDK_CONCURRENCY), handler)
    worker = sdks.RunningWorker(f"{a.sdk} SDK Worker", cmd, {}, handler)
    rates, worker_us, server_us = [], [], []
    try:
        worker.once(server.url, 2000)  # warm-up, not counted
        for i in range(a.reps):
            cpu0 = cpu_seconds(server.process.pid)
            run = worker.once(server.url, a.tasks)
            rates.append(run["tasks_per_s"])
            worker_us.append(run["worker_cpu_us_per_task"])
            server_us.append((cpu_seconds(server.process.pid) - cpu0) / a.tasks * 1e6)
            log(f"  run {i + 1}/{a.reps}: {rates[-1]:,.0f} tasks/s, worker {worker_us[-1]:.0f} "
                f"us/task, server {server_us[-1]:.0f} us/task")  # fmt: skip
    finally:
        worker.stop()
        server.stop()
    print(
        f"{a.sdk}: {statistics.median(rates):,.0f} tasks/s (median of {a.reps} x {a.tasks:,}), "
        f"worker {statistics.median(worker_us):.0f} us/task, "
        f"server {statistics.median(server_us):.0f} us/task"
    )


if __name__ == "__main__":
    main()
