"""`make -C bench profile`: sample the server with py-spy while the load client drives it.

Scenarios: SQLite and PostgreSQL at batch 100 and at batch 1 (the single endpoints);
`sqlite-keys1000`, `sqlite-hotkey`, `pg-keys1000`, `pg-hotkey`: batch 100 with the
concurrency keys of keys.py's rows (not in the default list); `sqlite-wf`, `pg-wf`: the
workflow row's 3-step instances (workflows.py), with the share of each request kind and of
advancing; and `sdk-python`,
`sdk-typescript`, `sdk-go`: the server on SQLite while that SDK's Worker (concurrency 100,
no-op handler) drains a fill, as in the bench's SDK phase.
For each scenario a fresh server is started, py-spy attaches to it (`record --pid`,
native frames off, idle off: what the one event-loop thread spends CPU on), the Go client
runs a fixed task count, py-spy is stopped with SIGINT and writes collapsed stacks. We
then print the top functions by self and by inclusive samples, grouped by file so the
hot paths show up as server layers (http/, lifecycle/, storage/) vs libraries.
Output: bench/profiles/<scenario>.txt (collapsed stacks; feed to any flamegraph tool)
and bench/profiles/<scenario>-top.md.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from orch8bench import sdks
from orch8bench.env import (
    BENCH,
    PgCluster,
    Workdir,
    cpu_seconds,
    launch_server,
    loadavg,
    loadgen,
    log,
)

PYSPY = BENCH / ".venv" / "bin" / "py-spy"
# Batch 100 with the load client's concurrency keys of keys.ROWS (issue 33).
KEYED = {"keys1000": ("-keys=1000", "-key-limit=10"), "hotkey": ("-keys=1", "-key-limit=200")}
OUT = BENCH / "profiles"


def parse(path: Path) -> tuple[collections.Counter, collections.Counter, collections.Counter, int]:
    """Collapsed stacks -> (self samples per function, inclusive per function, per file)."""
    own: collections.Counter = collections.Counter()
    incl: collections.Counter = collections.Counter()
    files: collections.Counter = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        own[frames[-1]] += n
        for f in set(frames):
            incl[f] += n
        files[_file(frames[-1])] += n
    return own, incl, files, total


def _file(frame: str) -> str:
    # "claim (orch8_server/storage/sqlite.py)" -> the path, shortened to the package part
    inside = frame.rpartition("(")[2].rstrip(")")
    for marker in ("site-packages/", "orch8_server/", "lib/python3"):
        if marker in inside:
            return (
                marker + inside.split(marker, 1)[1]
                if marker != "site-packages/"
                else inside.split(marker, 1)[1]
            )
    return inside


def summary(name: str, path: Path, rate: float, top: int = 25) -> str:
    own, incl, files, total = parse(path)
    pct = lambda n: f"{n / total * 100:.1f}%"  # noqa: E731
    lines = [
        f"# py-spy profile: {name}",
        "",
        f"{total} samples; {rate:,.0f} tasks/s while sampled.",
        "",
    ]
    lines += ["## Self time by file", "", "| file | self |", "|---|---|"]
    lines += [f"| `{f}` | {pct(n)} |" for f, n in files.most_common(top)]
    lines += ["", "## Self time by function", "", "| function | self |", "|---|---|"]
    lines += [f"| `{f}` | {pct(n)} |" for f, n in own.most_common(top)]
    lines += ["", "## Inclusive time by function", "", "| function | inclusive |", "|---|---|"]
    lines += [f"| `{f}` | {pct(n)} |" for f, n in incl.most_common(top + 15)]
    return "\n".join(lines) + "\n"


def sampled(pid: int, raw: Path, drive: Callable[[], dict]) -> tuple[dict, list[float]]:
    """Run `drive` while py-spy samples process `pid` into `raw`; (its answer, the load
    average before it)."""
    spy = subprocess.Popen(
        [str(PYSPY), "record", "--pid", str(pid), "--format", "raw", "--nolineno",
         "--rate", "250", "-o", str(raw)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(1.0)  # py-spy attaches
    before = loadavg()
    out = drive()
    spy.send_signal(signal.SIGINT)
    _, err = spy.communicate(timeout=60)
    if not raw.exists():
        raise RuntimeError(f"py-spy wrote nothing: {err[-1500:]}")
    return out, before


def write_summary(name: str, raw: Path, rate: float, before: list[float], notes: str = "") -> None:
    text = summary(name, raw, rate) + notes
    text += f"\nLoad average before {before}, after {loadavg()}.\n"
    (OUT / f"{name}-top.md").write_text(text)
    log(f"{name}: {rate:,.0f} tasks/s; {OUT / (name + '-top.md')}")
    print("\n".join(text.splitlines()[:22]))


def profile(name: str, db: str, work: Workdir, batch: int, tasks: int, *keys: str) -> None:
    server = launch_server(db, work.path, name)
    raw = OUT / f"{name}.txt"
    try:
        warm = [f"-n={tasks // 5}", *keys]
        loadgen("-mode=run", f"-url={server.url}", f"-batch={batch}", *warm)
        out, before = sampled(
            server.process.pid, raw,
            lambda: loadgen("-mode=run", f"-url={server.url}", f"-batch={batch}", f"-n={tasks}",
                            "-producers=2", "-consumers=8" if batch == 1 else "-consumers=4",
                            *keys),
        )  # fmt: skip
    finally:
        server.stop()
    write_summary(name, raw, out["tasks_per_s"], before)


def profile_sdk(sdk: str, work: Workdir, tasks: int) -> None:
    """The server while SDK `sdk`'s Worker drains `tasks` no-op tasks (filled at batch 100
    as they drain, the bench's SDK phase)."""
    name = f"sdk-{sdk.lower()}"
    server = launch_server(work.sqlite(name), work.path, name)
    raw = OUT / f"{name}.txt"
    handler = "noop_prof"
    cmd = sdks.worker_cmd(sdk, server.url, str(sdks.SDK_CONCURRENCY), handler)
    worker = sdks.RunningWorker(f"{sdk} SDK Worker", cmd, {}, handler)
    try:
        worker.once(server.url, max(1000, tasks // 5))  # warm
        cpu0 = cpu_seconds(server.process.pid)
        out, before = sampled(server.process.pid, raw, lambda: worker.once(server.url, tasks))
        server_us = (cpu_seconds(server.process.pid) - cpu0) / tasks * 1e6
    finally:
        worker.stop()
        server.stop()
    notes = (
        f"\nServer CPU {server_us:,.0f} us/task (py-spy's own sampling included), worker CPU "
        f"{out['worker_cpu_us_per_task']:,.0f} us/task.\n"
    )
    write_summary(name, raw, out["tasks_per_s"], before, notes)


# Where a workflow instance's CPU goes, by the request or hook that spends it (inclusive).
_WF_PARTS = (
    ("POST /instances/batch", "start_instances ("),
    ("POST /instances", "start_instance ("),
    ("batch completions", "complete_tasks ("),
    ("  of which advancing (P-WF-5)", "Workflows.advance ("),
    ("batch polls", "poll_tasks ("),
)


def profile_workflows(name: str, db: str, work: Workdir, instances: int) -> None:
    """The server while workflows.py's row runs: 3-step instances started 100 per request
    (P-WF-14) and drained by raw batch workers (the bench's workflow row)."""
    from orch8bench.workflows import run_once

    server = launch_server(db, work.path, name)
    raw = OUT / f"{name}.txt"
    try:
        run_once(server.url, max(200, instances // 5))  # warm
        cpu0 = cpu_seconds(server.process.pid)
        out, before = sampled(server.process.pid, raw, lambda: run_once(server.url, instances))
        server_us = (cpu_seconds(server.process.pid) - cpu0) / instances * 1e6
    finally:
        server.stop()
    _, incl, _, total = parse(raw)
    shares = {label: sum(n for f, n in incl.items() if f.startswith(prefix)) / total
              for label, prefix in _WF_PARTS}  # fmt: skip
    notes = (
        f"\n{out['instances_per_s']:,.0f} instances/s; server CPU {server_us:,.0f} us per "
        "3-step instance (py-spy's own sampling included).\n\n| part | inclusive |\n|---|---|\n"
        + "".join(f"| {label} | {share * 100:.1f}% |\n" for label, share in shares.items())
    )
    write_summary(name, raw, out["tasks"] / out["seconds"], before, notes)


# Every scenario --only may name.
SCENARIOS = (
    "sqlite-b100", "sqlite-b1", *(f"sqlite-{key}" for key in KEYED), "sqlite-wf",
    "sdk-python", "sdk-typescript", "sdk-go",
    "pg-b100", "pg-b1", "pg-wf", *(f"pg-{key}" for key in KEYED),
)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=30_000)
    ap.add_argument(
        "--only",
        default="sqlite-b100,sqlite-b1,pg-b100,pg-b1",
        help=f"comma list of: {', '.join(SCENARIOS)}",
    )
    a = ap.parse_args()
    only = set(a.only.split(","))
    if unknown := only - set(SCENARIOS):  # a typo would profile nothing, silently
        ap.error(f"--only: unknown {', '.join(sorted(unknown))}; one of {', '.join(SCENARIOS)}")
    OUT.mkdir(exist_ok=True)
    work = Workdir()
    if "sqlite-b100" in only:
        profile("sqlite-b100", work.sqlite("p100"), work, 100, a.tasks)
    if "sqlite-b1" in only:
        profile("sqlite-b1", work.sqlite("p1"), work, 1, a.tasks // 5)
    for key, flags in KEYED.items():
        if f"sqlite-{key}" in only:
            profile(f"sqlite-{key}", work.sqlite(key), work, 100, a.tasks, *flags)
    if "sqlite-wf" in only:
        profile_workflows("sqlite-wf", work.sqlite("wf"), work, a.tasks // 15)
    for sdk in ("Python", "TypeScript", "Go"):
        if f"sdk-{sdk.lower()}" in only:
            profile_sdk(sdk, work, a.tasks)
    if only & {"pg-b100", "pg-b1", "pg-wf", *(f"pg-{key}" for key in KEYED)}:
        cluster = PgCluster(fsync=True).init()
        try:
            if "pg-b100" in only:
                profile("pg-b100", cluster.create_database("prof"), work, 100, a.tasks)
            if "pg-b1" in only:
                profile("pg-b1", cluster.create_database("prof1"), work, 1, a.tasks // 10)
            if "pg-wf" in only:
                profile_workflows("pg-wf", cluster.create_database("prof_wf"), work,
                                  a.tasks // 30)  # fmt: skip
            for key, flags in KEYED.items():
                if f"pg-{key}" in only:
                    db = cluster.create_database(f"prof_{key}")
                    profile(f"pg-{key}", db, work, 100, a.tasks // 3, *flags)
        finally:
            cluster.destroy()
    shutil.rmtree(work.path, ignore_errors=True)


if __name__ == "__main__":
    main()
