"""Self-checks of the SDK phase (orch8bench/sdks.py, before.py) and of its issue 18 rows:
interleaved rounds, the telemetry verdicts and table, and the export of the SDK before
issue 18 that the `before` worker runs."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))

from orch8bench import before, report, verdicts  # noqa: E402
from orch8bench.measure import interleaved  # noqa: E402


def test_interleaved_runs_rounds_in_turn_and_summarizes_each_row() -> None:
    order: list[str] = []

    def once(label: str, rate: float):
        def run() -> dict:
            order.append(label)
            n = len([x for x in order if x == label])
            return {"tasks_per_s": rate * n, "seconds": 1.0, "tasks": 10,
                    "worker_cpu_us_per_task": 10.0 * n}  # fmt: skip

        return run

    rows = interleaved({"a": once("a", 100.0), "b": once("b", 200.0)}, 3)
    assert order == ["a", "b", "a", "b", "a", "b"]
    assert rows["a"]["runs"] == [100.0, 200.0, 300.0] and rows["a"]["median"] == 200.0
    assert rows["b"]["median"] == 400.0 and rows["b"]["spread_pct"] == 100.0
    assert rows["a"]["worker_cpu_us_per_task"] == 20.0
    assert len(rows["b"]["details"]) == 3 and rows["b"]["label"] == "b"


def _res(before_rate: float | None, off_rate: float, on_rate: float | None) -> dict:
    def row(rate: float | None, cpu: float) -> dict:
        if rate is None:
            return {"sdk": "Go", "error": "orch8otel missing"}
        return {"sdk": "Go", "median": rate, "spread_pct": 2.0, "worker_cpu_us_per_task": cpu}

    return {
        "sqlite": [{"batch": 100, "median": 10_000.0}],
        "sdk": [{"sdk": "raw", "median": 9000.0}, row(off_rate, 50.0)],
        "sdk_telemetry": [
            {"sdk": "Go", "before": row(before_rate, 49.0), "on": row(on_rate, 80.0)}
        ],
        "sdk_baseline": "3ac7302",
    }


def test_telemetry_rows_judge_off_against_before_and_state_the_cost_of_on() -> None:
    col = {name: i for i, name in enumerate(verdicts.HEAD)}
    rows = {r[0]: r for r in verdicts.headline(_res(5000.0, 4900.0, 4000.0))}
    off = rows["Go SDK Worker, telemetry off / before issue 18"]
    assert off[col["ours"]] == "98%, worker CPU 50 vs 49 us/task" and off[col["verdict"]] == "meets"
    on = rows["Go SDK Worker, telemetry on / off"]
    assert on[col["ours"]] == "82%, +30 worker CPU us/task" and on[col["verdict"]] == "stated"
    slow = {r[0]: r for r in verdicts.headline(_res(5000.0, 4000.0, 4000.0))}
    assert slow["Go SDK Worker, telemetry off / before issue 18"][col["verdict"]] == (
        "misses (84% of target)"
    )
    noisy = _res(5000.0, 4000.0, 4000.0)
    noisy["sdk"][1]["spread_pct"] = 25.0  # a 20% gap inside a 25% spread is noise
    assert {r[0]: r for r in verdicts.headline(noisy)}[
        "Go SDK Worker, telemetry off / before issue 18"
    ][col["verdict"]] == "meets (gap within the 25% spread)"
    broken = {r[0]: r for r in verdicts.headline(_res(None, 4000.0, None))}
    assert broken["Go SDK Worker, telemetry off / before issue 18"][col["verdict"]] == (
        "not measured"
    )
    assert broken["Go SDK Worker, telemetry on / off"][col["verdict"]] == "not measured"


def test_telemetry_table_shows_each_variant_and_the_ratios() -> None:
    text = "\n".join(report.telemetry_table(_res(5000.0, 4900.0, 4000.0)))
    assert "| Go | 5,000 | 4,900 | 98% | 4,000 | 82% | 49 / 50 / 80 | 30 |" in text
    assert "`3ac7302`" in text
    failed = "\n".join(report.telemetry_table(_res(5000.0, 4900.0, None)))
    assert "| Go | 5,000 | 4,900 | 98% | FAILED | n/a |" in failed
    assert "on: orch8otel missing" in failed


def test_before_exports_the_old_python_sdk_and_imports_it(tmp_path: Path) -> None:
    """The `before` worker must run the old package, not the root venv's editable one."""
    cmd, env = before.python_worker("http://x", "1", "noop_before", tmp_path, before.BASELINE_REV)
    assert env["PYTHONPATH"] == str(tmp_path / "sdk-python")
    assert cmd[-3:] == ["http://x", "1", "noop_before"]
    old = subprocess.run(["git", "show", f"{before.BASELINE_REV}:sdk-python/orch8/worker/__init__.py"],
                         cwd=BENCH.parent, capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert (tmp_path / "sdk-python/orch8/worker/__init__.py").read_text() == old
    assert not (tmp_path / "sdk-python/orch8/otel.py").exists()


def test_the_server_is_asked_only_once_the_worker_counted_the_run() -> None:
    from orch8bench import sdks

    def never() -> int:
        raise AssertionError("asked the server before the worker's count covered the run")

    assert not sdks.drained(99, 100, filling=False, left=never)
    assert not sdks.drained(100, 100, filling=True, left=never)  # the fill still adds tasks
    asked = []
    assert not sdks.drained(100, 100, filling=False, left=lambda: asked.append(1) or 3)
    assert sdks.drained(120, 100, filling=False, left=lambda: asked.append(1) or 0)
    assert len(asked) == 2


def test_the_worker_count_is_read_from_its_output() -> None:
    from orch8bench import sdks

    prog = "import time; [print(i, flush=True) for i in (100, 200)]; print('noise'); time.sleep(30)"
    w = sdks.RunningWorker("t", [sys.executable, "-c", prog], {}, "noop_t")
    try:
        deadline = time.monotonic() + 10
        while w.handled != 200 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert w.handled == 200
    finally:
        w.stop()


def test_each_round_is_judged_against_the_raw_run_beside_it() -> None:
    from orch8bench import sdks

    sdk = {"details": [{"tasks_per_s": 3700.0}, {"tasks_per_s": 4000.0}, {"tasks_per_s": 5400.0}]}
    raw = {"details": [{"tasks_per_s": 4800.0}, {"tasks_per_s": 7900.0}, {"tasks_per_s": 7400.0}]}
    assert sdks.round_shares(sdk, raw) == [0.771, 0.506, 0.730]


def test_a_worker_that_logs_a_lot_is_not_blocked_and_its_exit_says_why() -> None:
    from orch8bench import sdks

    # 200 KB on stderr (more than a pipe holds), then a count and an exit with a reason.
    prog = ("import sys; [sys.stderr.write('x' * 99 + '\\n') for _ in range(2000)]; "
            "print(100, flush=True); sys.stderr.write('boom: the reason\\n'); sys.exit(3)")  # fmt: skip
    w = sdks.RunningWorker("t", [sys.executable, "-c", prog], {}, "noop_t")
    try:
        assert w.proc.wait(10) == 3  # it was never blocked writing its log
        with pytest.raises(RuntimeError, match=r"t worker exited: (?s:.*)boom: the reason"):
            w.once("http://127.0.0.1:9", 100)
    finally:
        w.stop()


METRICS = """\
# TYPE orch8_request_duration_seconds histogram
orch8_request_duration_seconds_bucket{operation="pollTasks",le="0.001"} 3.0
orch8_request_duration_seconds_count{operation="pollTasks"} 12.0
orch8_request_duration_seconds_count{operation="completeTasks"} 20.0
orch8_request_duration_seconds_count{operation="completeTask"} 5.0
orch8_request_duration_seconds_count{operation="heartbeatWorker"} 7.0
"""


def test_requests_are_counted_from_the_servers_request_histogram() -> None:
    from orch8bench import sdks

    before = sdks.request_counts(METRICS)
    assert before == {"polls": 12.0, "completion_requests": 25.0}  # heartbeats do not count
    after = {"polls": 17.0, "completion_requests": 35.0}
    assert sdks.per_1000(before, after, 500) == {
        "polls_per_1000": 10.0,
        "completion_requests_per_1000": 20.0,
    }


def test_the_sdk_table_shows_requests_per_1000_tasks() -> None:
    res = _res(5000.0, 4900.0, 4000.0)
    res["sdk_concurrency"] = 100
    res["sdk"][1] |= {"polls_per_1000": 10.0, "completion_requests_per_1000": 25.5}
    text = "\n".join(report.sdk_table(res))
    assert "| polls / 1,000 tasks | completion requests / 1,000 tasks | load |" in text
    row = next(line for line in text.splitlines() if line.startswith("| Go | 4,900 |"))
    assert row.endswith("| 10.0 | 25.5 |  |")
    raw = next(line for line in text.splitlines() if line.startswith("| raw | 9,000 |"))
    assert raw.endswith("|  |  |  |")  # not counted: blank, not zero


def test_a_worker_run_counts_the_requests_the_server_answered(tmp_path: Path) -> None:
    """The Python SDK's bench worker against a real server: every claim and every result
    travels in batches of at most 100, so 500 tasks take at least 5 of each."""
    from orch8bench import sdks
    from orch8bench.env import launch_server

    server = launch_server(str(tmp_path / "t.db"), tmp_path, "requests")
    w = None
    try:
        cmd = sdks.worker_cmd("Python", server.url, "100", "noop_count")
        w = sdks.RunningWorker("Python", cmd, {}, "noop_count", server.process.pid)
        out = w.once(server.url, 500)
        assert out["tasks"] == 500 and out["cpu_s"] > 0
        assert 10.0 <= out["polls_per_1000"] <= 200.0, out
        assert 10.0 <= out["completion_requests_per_1000"] <= 200.0, out
    finally:
        if w is not None:
            w.stop()
        server.stop()


def test_the_requests_tool_prints_the_median_and_each_round() -> None:
    from orch8bench import requests

    def run(rate: float, polls: float, completions: float) -> dict:
        return {"tasks_per_s": rate, "polls_per_1000": polls,
                "completion_requests_per_1000": completions}  # fmt: skip

    lines = requests.table({"Go": [run(900.0, 12.0, 30.0), run(1100.0, 11.0, 24.0),
                                   run(1000.0, 15.0, 25.5)]})  # fmt: skip
    assert lines[0] == (
        "| worker | tasks/s | polls / 1,000 tasks | completion requests / 1,000 tasks |"
    )
    assert lines[2] == "| Go | 1,000 | 12 (12, 11, 15) | 25.5 (30, 24, 25.5) |"
