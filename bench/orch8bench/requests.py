"""Requests per 1,000 tasks of each SDK's worker under a handler shape (issue 32).

    python -m orch8bench.requests [--tasks N] [--concurrency C] [--sleep-ms M] [--rounds R]

One server; each SDK's bench worker (bench/sdk/) in turn drains N tasks enqueued while it
runs (RunningWorker.once), R rounds, and the polls and completion requests the server
answered are printed per 1,000 tasks (median and each round). Each call sleeps a uniform
random 0..M ms (ORCH8_BENCH_SLEEP_MS); Python runs twice, with an async handler and with a
sync one in the worker's threads (ORCH8_BENCH_SYNC=1). The no-op shape is the SDK rows'.
The counts follow from P-SDK-12/13/26 and from how fast the server answers, so a loaded
machine shifts them: compare SDKs within one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from orch8bench.env import launch_server, log
from orch8bench.sdks import COUNTED, RunningWorker, worker_cmd

# (label, SDK, extra environment)
WORKERS = (
    ("Python, async handler", "Python", {}),
    ("Python, sync handler", "Python", {"ORCH8_BENCH_SYNC": "1"}),
    ("TypeScript", "TypeScript", {}),
    ("Go", "Go", {}),
)


def count(url: str, pid: int, a: argparse.Namespace) -> dict[str, list[dict]]:
    """{label: each round's run} of every worker, one worker at a time."""
    runs: dict[str, list[dict]] = {}
    for i, (label, sdk, env) in enumerate(WORKERS):
        handler = f"requests_{i}"
        cmd = worker_cmd(sdk, url, str(a.concurrency), handler)
        w = RunningWorker(label, cmd, env | {"ORCH8_BENCH_SLEEP_MS": str(a.sleep_ms)}, handler, pid)
        try:
            runs[label] = [w.once(url, a.tasks) for _ in range(a.rounds)]
        finally:
            w.stop()
    return runs


def table(runs: dict[str, list[dict]]) -> list[str]:
    head = ["worker", "tasks/s", *(f"{kind.replace('_', ' ')} / 1,000 tasks" for kind in COUNTED)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, rounds in runs.items():
        cells = [label, f"{statistics.median(r['tasks_per_s'] for r in rounds):,.0f}"]
        for kind in COUNTED:
            got = [r[f"{kind}_per_1000"] for r in rounds]
            each = ", ".join(f"{x:g}" for x in got)
            cells.append(f"{statistics.median(got):g} ({each})")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--sleep-ms", type=float, default=0.0)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="orch8-requests-") as tmp:
        server = launch_server(str(Path(tmp) / "requests.db"), Path(tmp), "requests")
        try:
            log(f"{a.tasks} tasks, concurrency {a.concurrency}, sleep 0..{a.sleep_ms:g} ms")
            runs = count(server.url, server.process.pid, a)
        finally:
            server.stop()
    print("\n".join(table(runs)))


if __name__ == "__main__":
    main()
