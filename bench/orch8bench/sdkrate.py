"""One SDK Worker alone on a fresh SQLite server: the quick check of an SDK change.

    python -m orch8bench.sdkrate Python|TypeScript|Go [--reps 5] [--tasks 20000]

Starts the server (working tree) and the SDK's bench worker program (bench/sdk/,
concurrency 100, no-op handler), warms up, then times `--reps` fill + drain runs as the
bench's SDK phase does (orch8bench/sdks.py) and prints each run and the medians of
tasks/s, the worker's and the server's CPU microseconds per task, and the polls and
completion requests the server answered per 1,000 tasks. No peers, no report:
`make bench` stays the measurement of record.
"""

from __future__ import annotations

import argparse

from orch8bench import sdks
from orch8bench.env import Workdir, launch_server
from orch8bench.measure import repeat


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
    try:
        worker.once(server.url, 2000)  # warm-up, not counted
        row = repeat(f"{a.sdk} SDK Worker", a.reps, lambda: worker.once(server.url, a.tasks),
                     server_pid=server.process.pid)  # fmt: skip
    finally:
        worker.stop()
        server.stop()
    print(
        f"{a.sdk}: {row['median']:,.0f} tasks/s (median of {a.reps} x {a.tasks:,}, spread "
        f"{row['spread_pct']}%), worker {row['worker_cpu_us_per_task']:.0f} us/task, "
        f"server {row['cpu_us_per_task']:.0f} us/task; per 1,000 tasks "
        f"{row.get('polls_per_1000', 0):.1f} polls, "
        f"{row.get('completion_requests_per_1000', 0):.1f} completion requests"
    )


if __name__ == "__main__":
    main()
