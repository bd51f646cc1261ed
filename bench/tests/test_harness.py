"""Fast self-checks of the benchmark harness (never the benchmark itself): the statistics,
the verdicts of the report, and the Go load client against a stub and a real server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))

from orch8bench import report  # noqa: E402
from orch8bench.env import LOADGEN, launch_server, start_stub  # noqa: E402
from orch8bench.measure import summarize  # noqa: E402


def test_summarize_reports_median_and_spread() -> None:
    s = summarize([100.0, 80.0, 120.0])
    assert s["median"] == 100.0
    assert s["spread_pct"] == 40.0
    assert (s["min"], s["max"]) == (80.0, 120.0)


def _result(ours_b100: float, p99: float, rss_end: float) -> dict:
    def tp(batch: int, median: float) -> dict:
        return {"batch": batch, "median": median, "spread_pct": 1.0, "runs": [median],
                "tasks": 10, "load_before": [0.5], "load_after": [0.6]}  # fmt: skip

    return {
        "quick": False,
        "date": "2026-01-01 00:00 UTC",
        "duration_s": 1,
        "load_start": [0.5, 0.5, 0.5],
        "load_end": [0.6, 0.5, 0.5],
        "machine": {"host": "h"},
        "settings": {},
        "shape": {},
        "sdk_concurrency": 100,
        "sqlite": [tp(1, 3000.0), tp(100, ours_b100)],
        "sqlref_sqlite": [tp(1, 6000.0), tp(100, 60_000.0)],
        "pg": [tp(100, 12_000.0)],
        "sqlref_pg": [tp(100, 24_000.0)],
        "peers": [{"peer": "a", "median": 3000.0}, {"peer": "b", "median": 6000.0}],
        "latency_sqlite": {
            "p50_ms": 1.0,
            "p99_ms": p99,
            "max_ms": p99,
            "samples": 3,
            "label": "SQLite",
            "load_before": [0.5],
            "load_after": [0.5],
        },
        "rss": {
            "tasks": 1_000_000,
            "rss_start_mb": 100.0,
            "rss_end_mb": rss_end,
            "peak_mb": rss_end,
            "fill_tasks_per_s": 1.0,
            "drain_tasks_per_s": 1.0,
            "samples": [],
            "load_before": [0.5],
            "load_after": [0.5],
        },
    }


def test_headline_verdicts_follow_the_design_targets() -> None:
    rows = {r[0]: r for r in report.headline(_result(30_000.0, 10.0, 105.0))}
    b100 = rows["SQLite, batch 100, tasks/s"]
    assert b100[1] == "30,000" and b100[5] == "50%" and b100[7] == "meets"
    pg = rows["PostgreSQL, batch 100, tasks/s"]
    assert pg[2] == "6,000 (b)" and pg[3] == "2.0x" and pg[7] == "meets"
    assert rows["pickup latency p99, SQLite, ms"][7] == "meets"
    assert rows["server RSS draining 1,000,000 tasks (SQLite), MiB"][7] == "meets"

    bad = {r[0]: r for r in report.headline(_result(20_000.0, 40.0, 400.0))}
    assert bad["SQLite, batch 100, tasks/s"][7] == "misses (80% of target)"
    assert bad["pickup latency p99, SQLite, ms"][7].startswith("misses")
    assert bad["server RSS draining 1,000,000 tasks (SQLite), MiB"][7] == "misses (grows)"


def test_render_flags_a_loaded_machine(tmp_path: Path) -> None:
    res = _result(30_000.0, 10.0, 105.0)
    assert "was loaded" not in report.render(res)
    res["load_start"] = [6.0, 5.0, 4.0]
    md, js = report.write(res, tmp_path)
    text = Path(md).read_text()
    assert "was loaded" in text and text.index("## Summary") < text.index("## End-to-end")
    assert json.loads(Path(js).read_text())["sqlite"][1]["median"] == 30_000.0


def _loadgen(*args: str) -> dict:
    out = subprocess.run([str(LOADGEN), *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def stub():
    proc, url = start_stub(100)
    yield url
    proc.terminate()
    proc.wait()


def test_loadgen_counts_every_task_against_the_stub(stub: str) -> None:
    out = _loadgen("-mode=run", f"-url={stub}", "-n=5000", "-batch=100")
    assert out["tasks"] == 5000 and out["errors"] == 0 and out["tasks_per_s"] > 0


def test_loadgen_drives_the_real_server(tmp_path: Path) -> None:
    server = launch_server(str(tmp_path / "t.db"), tmp_path, "selftest")
    try:
        assert server.process is not None and server.process.pid > 0  # what repeat() samples
        for batch in ("1", "100"):
            out = _loadgen("-mode=run", f"-url={server.url}", "-n=300", f"-batch={batch}")
            assert out["errors"] == 0 and out["tasks"] == 300
        lat = _loadgen("-mode=latency", f"-url={server.url}", "-n=5", "-warmup=1")
        assert lat["samples"] == 5 and 0 < lat["p50_ms"] <= lat["max_ms"]
        with __import__("urllib.request").request.urlopen(server.url + "/queues") as r:
            queues = json.loads(r.read())["queues"]
        assert all(q["pending"] == 0 and q["running"] == 0 for q in queues)
    finally:
        server.stop()


def test_direct_sql_reference_completes_every_task(tmp_path: Path) -> None:
    db = tmp_path / "ref.db"
    out = subprocess.run(
        [sys.executable, "-m", "orch8bench.sqlref", "sqlite", str(db), "--batch=50", "--tasks=300"],
        capture_output=True, text=True, cwd=BENCH, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["tasks_per_s"] > 0
    import sqlite3

    with sqlite3.connect(db) as c:
        statuses = dict(c.execute("SELECT status, count(*) FROM tasks GROUP BY status"))
        attempts = c.execute("SELECT count(*) FROM attempts WHERE outcome = 'completed'")
        assert statuses == {"completed": 300} and attempts.fetchone()[0] == 300


def test_compare_calls_only_changes_beyond_the_spread() -> None:
    from orch8bench.compare import compare

    def run(median: float, spread: float) -> dict:
        row = {"label": "SQLite batch 100", "median": median, "spread_pct": spread}
        return {"sqlite": [row]}

    assert compare(run(1000, 5), run(1030, 5))[-1].endswith("noise")
    assert compare(run(1000, 5), run(1200, 5))[-1].endswith("better")
    assert compare(run(1000, 5), run(800, 30))[-1].endswith("noise")
    assert compare(run(1000, 5), run(800, 10))[-1].endswith("worse")
