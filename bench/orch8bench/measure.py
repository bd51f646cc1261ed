"""One measured row: repetitions, median and spread, load average before and after,
CPU seconds of the server and of the client during the timed part."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from orch8bench.env import cpu_seconds, loadavg, log

# Figures of each run whose median a row carries.
PER_RUN = (
    "server_cores",
    "client_cores",
    "cpu_us_per_task",
    "worker_cpu_us_per_task",
    "db_us_per_task",
    "polls_per_1000",
    "completion_requests_per_1000",
)


def summarize(values: list[float]) -> dict[str, Any]:
    """Median and spread ((max - min) / median, in percent) of repetitions."""
    med = statistics.median(values)
    spread = (max(values) - min(values)) / med * 100 if med else 0.0
    return {
        "median": med,
        "min": min(values),
        "max": max(values),
        "spread_pct": round(spread, 1),
        "runs": values,
    }


def repeat(
    label: str,
    reps: int,
    once: Callable[[], dict],
    key: str = "tasks_per_s",
    server_pid: int | None = None,
) -> dict[str, Any]:
    """Run `once` reps times; each returns a dict with `key` and maybe `seconds`, `tasks`,
    `client_cpu_s` and `cpu_s` (CPU seconds of the measured process over the measured
    window). Without `cpu_s`, the CPU of `server_pid` across the whole call is used.
    Adds cores busy (`server_cores`) and CPU microseconds per task (`cpu_us_per_task`);
    with `db_cpu_s` (PostgreSQL's CPU seconds, over `db_tasks` tasks if given), the
    database's CPU microseconds per task (`db_us_per_task`)."""
    values: list[float] = []
    extra: list[dict] = []
    load_before = loadavg()
    for i in range(reps):
        cpu0 = cpu_seconds(server_pid) if server_pid else 0.0
        out = once()
        if server_pid and "cpu_s" not in out:
            out["cpu_s"] = cpu_seconds(server_pid) - cpu0
        if out.get("cpu_s") is not None and out.get("seconds"):
            out["server_cores"] = round(out["cpu_s"] / out["seconds"], 2)
            if out.get("tasks"):
                out["cpu_us_per_task"] = round(out["cpu_s"] / out["tasks"] * 1e6, 1)
        if out.get("db_cpu_s") is not None and out.get("tasks"):
            # `db_tasks`: every task the database saw, when the CPU was read around the
            # whole call (warm-up included) rather than over the measured window.
            out["db_us_per_task"] = round(
                out["db_cpu_s"] / out.get("db_tasks", out["tasks"]) * 1e6, 1
            )
        if out.get("client_cpu_s") is not None and out.get("seconds"):
            out["client_cores"] = round(out["client_cpu_s"] / out["seconds"], 2)
        values.append(out[key])
        extra.append(out)
        per_task = (
            f", {out['cpu_us_per_task']:,.0f} CPU us/task" if "cpu_us_per_task" in out else ""
        )
        log(f"  {label} run {i + 1}/{reps}: {out[key]:,.1f} {key}{per_task}")
    row = summarize(values)
    row.update(label=label, load_before=load_before, load_after=loadavg(), details=extra)
    for k in PER_RUN:
        got = [e[k] for e in extra if k in e]
        if got:
            row[k] = statistics.median(got)
    return row


def interleaved(
    onces: dict[str, Callable[[], dict]],
    reps: int,
    server_pid: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Like `repeat` for several rows at once, in rounds (a, b, c, a, b, c, ...): a drift
    of the machine's load over the rounds hits every row alike, so their ratio holds."""
    rounds = {label: [] for label in onces}
    for i in range(reps):
        for label, once in onces.items():
            one = repeat(f"{label} (round {i + 1}/{reps})", 1, once, server_pid=server_pid)
            rounds[label].append(one)
    rows = {}
    for label, ones in rounds.items():
        details = [one["details"][0] for one in ones]
        row = summarize([one["runs"][0] for one in ones])
        row.update(label=label, load_before=ones[0]["load_before"],
                   load_after=ones[-1]["load_after"], details=details)  # fmt: skip
        for k in PER_RUN:
            got = [d[k] for d in details if k in d]
            if got:
                row[k] = statistics.median(got)
        rows[label] = row
    return rows
