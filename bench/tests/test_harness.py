"""Fast self-checks of the benchmark harness (never the benchmark itself): the statistics,
the verdicts of the report, the Go load client against a stub and a real server (with the
server's CPU over the measured window), and the minimal-table limit by bare SQL and over
its minimal HTTP loop."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))

from orch8bench import report, verdicts  # noqa: E402
from orch8bench.env import (  # noqa: E402
    LOADGEN,
    launch_server,
    loadgen_window,
    start_minimal,
    start_stub,
)
from orch8bench.measure import repeat, summarize  # noqa: E402


def test_summarize_reports_median_and_spread() -> None:
    s = summarize([100.0, 80.0, 120.0])
    assert s["median"] == 100.0
    assert s["spread_pct"] == 40.0
    assert (s["min"], s["max"]) == (80.0, 120.0)


def test_repeat_charges_the_window_cpu_per_task() -> None:
    row = repeat("x", 2, lambda: {"tasks_per_s": 1000.0, "seconds": 2.0, "tasks": 2000,
                                  "cpu_s": 1.0})  # fmt: skip
    assert row["cpu_us_per_task"] == 500.0 and row["server_cores"] == 0.5


def _result(ours_b100: float, p99: float, rss_end: float) -> dict:
    def tp(batch: int, median: float) -> dict:
        return {"batch": batch, "median": median, "spread_pct": 1.0, "runs": [median],
                "tasks": 10, "load_before": [0.5], "load_after": [0.6],
                "cpu_us_per_task": 90.0}  # fmt: skip

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
        "limit_sqlite": {
            "sql": [tp(1, 6000.0), tp(100, 80_000.0)],
            "http": [tp(1, 4000.0), tp(100, 60_000.0)],
        },
        "pg": [tp(1, 1000.0), tp(100, 12_000.0)],
        "limit_pg": {"sql": [tp(100, 30_000.0)], "http": [tp(100, 24_000.0)]},
        "peers": [{"peer": "a", "median": 3000.0}, {"peer": "b", "median": 6000.0}],
        "sdk": [
            {"sdk": "raw", "median": 5000.0},
            {"sdk": "Go", "median": ours_b100 * 0.9, "spread_pct": 1.0},
            {"sdk": "Python", "error": "exited"},
        ],
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
    col = {name: i for i, name in enumerate(verdicts.HEAD)}
    rows = {r[0]: r for r in verdicts.headline(_result(30_000.0, 10.0, 105.0))}
    assert all(len(r) == len(verdicts.HEAD) for r in rows.values())
    b100 = rows["SQLite, batch 100, tasks/s"]
    assert b100[col["ours"]] == "30,000" and b100[col["verdict"]] == "meets"
    assert b100[col["ours / HTTP limit"]] == "50%" and b100[col["server CPU us/task"]] == "90"
    assert b100[col["limit: bare SQL"]] == "80,000"
    pg = rows["PostgreSQL, batch 100, tasks/s"]
    assert pg[col["best peer"]] == "6,000 (b)" and pg[col["ours / peer"]] == "2.00x"
    assert pg[col["verdict"]] == "stated"  # judged per named peer: test_river_peer.py
    assert rows["PostgreSQL, single poll/complete, tasks/s"][col["verdict"]] == (
        "misses (67% of target)"
    )
    assert rows["SQLite, batch 100, share of the minimal HTTP limit"][col["verdict"]] == "meets"
    assert rows["PostgreSQL, batch 100, share of the minimal HTTP limit"][col["verdict"]] == "meets"
    assert rows["pickup latency p99, SQLite, ms"][col["verdict"]] == "meets"
    assert rows["Go SDK Worker, share of raw batch 100 (SQLite)"][col["verdict"]] == "meets"
    assert rows["Python SDK Worker, share of raw batch 100 (SQLite)"][col["ours"]] == "FAILED"
    assert rows["server RSS draining 1,000,000 tasks (SQLite), MiB"][col["verdict"]] == "meets"

    bad_res = _result(20_000.0, 40.0, 400.0)
    bad_res["sdk"][1]["median"] = 14_000.0  # 70% of the raw batch-100 figure
    bad = {r[0]: r for r in verdicts.headline(bad_res)}
    assert bad["SQLite, batch 100, tasks/s"][col["verdict"]] == "misses (80% of target)"
    assert bad["SQLite, batch 100, share of the minimal HTTP limit"][col["verdict"]] == (
        "misses (83% of target)"
    )
    assert bad["pickup latency p99, SQLite, ms"][col["verdict"]].startswith("misses")
    assert bad["Go SDK Worker, share of raw batch 100 (SQLite)"][col["verdict"]] == (
        "misses (87% of target)"
    )
    assert bad["server RSS draining 1,000,000 tasks (SQLite), MiB"][col["verdict"]] == (
        "misses (grows)"
    )
    # With rounds, the verdict is the median of the per-round shares against the raw run
    # beside each (here 78%), not the ratio to the end-to-end row (70%, as above).
    beside = _result(20_000.0, 40.0, 400.0)
    beside["sdk"][1].update(median=14_000.0, raw_b100_beside=16_000.0,
                            raw_b100_rounds=[0.9, 0.78, 0.7])  # fmt: skip
    go = {r[0]: r for r in verdicts.headline(beside)}[
        "Go SDK Worker, share of raw batch 100 (SQLite)"
    ]
    assert (go[col["ours"]], go[col["verdict"]]) == ("78%", "misses (98% of target)")
    beside["sdk"][1]["raw_b100_rounds"] = [0.9, 0.85, 0.7]
    go = {r[0]: r for r in verdicts.headline(beside)}[
        "Go SDK Worker, share of raw batch 100 (SQLite)"
    ]
    assert (go[col["ours"]], go[col["verdict"]]) == ("85%", "meets")


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
            out = loadgen_window(server.process.pid, "-mode=run", f"-url={server.url}",
                                 "-n=300", "-warmup=50", f"-batch={batch}")  # fmt: skip
            assert out["errors"] == 0 and out["tasks"] == 300
            assert out["cpu_s"] > 0  # the server's CPU between the client's window markers
        lat = _loadgen("-mode=latency", f"-url={server.url}", "-n=5", "-warmup=1")
        assert lat["samples"] == 5 and 0 < lat["p50_ms"] <= lat["max_ms"]
        with __import__("urllib.request").request.urlopen(server.url + "/queues") as r:
            queues = json.loads(r.read())["queues"]
        assert all(q["pending"] == 0 and q["running"] == 0 for q in queues)
    finally:
        server.stop()


def _statuses(db: Path) -> dict[str, int]:
    import sqlite3

    with sqlite3.connect(db) as c:
        return dict(c.execute("SELECT status, count(*) FROM jobs GROUP BY status"))


def test_minimal_table_bare_sql_completes_every_task(tmp_path: Path) -> None:
    db = tmp_path / "min.db"
    for batch in ("1", "50"):
        out = subprocess.run(
            [sys.executable, "-m", "orch8bench.minimal", "sqlite", str(db), f"--batch={batch}",
             "--tasks=300", "--warmup=20"],
            capture_output=True, text=True, cwd=BENCH, timeout=60,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        assert got["tasks"] == 300 and got["tasks_per_s"] > 0 and got["cpu_s"] > 0
    assert _statuses(db) == {"done": 640}


def test_minimal_http_loop_serves_the_load_client(tmp_path: Path) -> None:
    db = tmp_path / "minhttp.db"
    proc, url = start_minimal(str(db), tmp_path, "selftest")
    try:
        for batch, n in (("1", 400), ("100", 4000)):  # enough work for 10 ms CPU ticks
            out = loadgen_window(proc.pid, "-mode=run", f"-url={url}", f"-n={n}", "-warmup=40",
                                 f"-batch={batch}", "-consumers=4")  # fmt: skip
            assert out["errors"] == 0 and out["tasks"] == n and out["cpu_s"] > 0
        # A parked long-poll (wait_ms 30000) is woken by the enqueue: without the wake-up
        # each sample would take 30 s and this would time out.
        lat = _loadgen("-mode=latency", f"-url={url}", "-n=5", "-warmup=1")
        assert lat["samples"] == 5 and lat["max_ms"] < 5000
    finally:
        proc.terminate()
        proc.wait(30)
    assert _statuses(db) == {"done": 400 + 4000 + 80 + 6}


def test_compare_calls_only_changes_beyond_the_spread() -> None:
    from orch8bench.compare import compare

    def run(median: float, spread: float) -> dict:
        row = {"label": "SQLite batch 100", "median": median, "spread_pct": spread}
        return {"sqlite": [row]}

    assert compare(run(1000, 5), run(1030, 5))[-1].endswith("noise")
    assert compare(run(1000, 5), run(1200, 5))[-1].endswith("better")
    assert compare(run(1000, 5), run(800, 30))[-1].endswith("noise")
    assert compare(run(1000, 5), run(800, 10))[-1].endswith("worse")


def test_ab_exports_a_revision_to_run_from(tmp_path: Path) -> None:
    from orch8bench.ab import export

    path = Path(export("HEAD", tmp_path / "A"))
    assert (path / "orch8_server" / "__init__.py").is_file()
    assert (path / "orch8_server" / "storage" / "sqlite.py").is_file()


def test_ab_alternates_the_servers_and_prints_the_medians(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from orch8bench import ab

    order: list[str] = []
    figures = iter([(1.0, 10.0), (2.0, 20.0), (3.0, 30.0), (4.0, 40.0), (5.0, 50.0), (6.0, 60.0)])

    def measure(s: object) -> tuple:
        order.append(str(s))
        return next(figures)

    runs = ab.alternate({"A x": "a", "B y": "b"}, 3, measure)  # type: ignore[dict-item]
    assert order == ["a", "b", "a", "b", "a", "b"]  # interleaved, so drift hits both alike
    assert runs == {"A x": [(1.0, 10.0), (3.0, 30.0), (5.0, 50.0)],
                    "B y": [(2.0, 20.0), (4.0, 40.0), (6.0, 60.0)]}  # fmt: skip
    ab.report("sqlite batch 100", runs, [("tasks/s", ",.0f"), ("us/task", ",.0f")])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("sqlite batch 100 A x: 3 tasks/s, 30 us/task (runs [(1.0, 10.0)")
    assert lines[1].startswith("sqlite batch 100 B y: 4 tasks/s, 40 us/task")


class _BusyCluster:
    """Answers like PgCluster.psql: an autovacuum worker for the first `busy` looks."""

    def __init__(self, busy: int) -> None:
        self.busy = busy
        self.calls: list[str] = []

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        self.calls.append(sql)
        if sql == "CHECKPOINT":
            return ""
        if "pg_stat_user_tables" in sql:
            assert dbname == "orch8"
            return "150000|287310|3"
        self.busy -= 1
        return "autovacuum: VACUUM public.tasks" if self.busy >= 0 else ""


def test_settle_waits_for_autovacuum_and_the_report_says_so(tmp_path: Path) -> None:
    from orch8bench.run import settle

    cluster = _BusyCluster(busy=2)
    out = settle(cluster, "orch8", limit_s=30)  # type: ignore[arg-type]
    assert cluster.calls[0] == "CHECKPOINT" and len(cluster.calls) == 5  # 2 busy, 1 idle, stats
    assert out["autovacuum"] == ["autovacuum: VACUUM public.tasks"] and out["settle_s"] >= 1.0
    res = _result(30_000.0, 10.0, 105.0)
    res["pg_settle"] = out
    assert "then no autovacuum worker running" in report.render(res)
    assert "`autovacuum: VACUUM public.tasks`" in report.render(res)
    assert "held 150,000 rows and 287,310 dead row versions" in report.render(res)


def test_deadrows_measures_pickup_around_a_burst_and_a_vacuum() -> None:
    from orch8bench import deadrows

    rows = deadrows.main(["--tasks", "2000", "--samples", "5"])
    assert [r["stage"] for r in rows] == [
        "fresh table", "after the burst", "after the burst, again", "after VACUUM",
    ]  # fmt: skip
    assert all(r["p50_ms"] > 0 and r["p99_ms"] >= r["p50_ms"] for r in rows)
    assert all(isinstance(r["live"], int) and isinstance(r["dead"], int) for r in rows)


class _VacuumingCluster:
    """pg_stat_user_tables of a tasks table that autovacuum reaches on the third look."""

    def __init__(self) -> None:
        self.looks = 0

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        assert "pg_stat_user_tables" in sql and dbname == "orch8"
        self.looks += 1
        return "534000|295000|4" if self.looks < 3 else "534000|400|5"


def test_await_vacuum_waits_for_autovacuum_and_the_report_keeps_both_pickup_rows() -> None:
    from orch8bench.run import await_vacuum

    cluster = _VacuumingCluster()
    out = await_vacuum(cluster, "orch8", limit_s=30)  # type: ignore[arg-type]
    assert cluster.looks >= 3 and out["vacuumed"] and out["waited_s"] >= 2.0
    assert (out["dead_before"], out["dead"]) == (295_000, 400)
    res = _result(30_000.0, 10.0, 105.0)
    lat = {"samples": 300, "p99_ms": 9.0, "max_ms": 10.0, "load_before": [1.0],
           "load_after": [1.0]}  # fmt: skip
    res["latency_pg_burst"] = lat | {"label": "PostgreSQL, right after the burst", "p50_ms": 5.5}
    res["latency_pg"] = lat | {"label": "PostgreSQL", "p50_ms": 2.5}
    res["pg_settle"] = {"settle_s": 0.5, "checkpoint_s": 0.2, "autovacuum": [],
                        "tasks_live": 534_000, "tasks_dead": 295_000}  # fmt: skip
    res["pg_vacuum"] = out
    text = report.render(res)
    assert "| PostgreSQL, right after the burst | 300 | 5.50 |" in text
    assert "295,000 -> 400 dead after" in text
    assert "| pickup latency p50, PostgreSQL, ms | 2.50 |" in text
    assert "right after the throughput phases, ms | 5.50 |" in text
    assert "none (295,000 dead rows not yet vacuumed) | stated |" in text


def test_await_vacuum_says_when_autovacuum_never_came() -> None:
    from orch8bench.run import await_vacuum

    class Stuck:
        def psql(self, sql: str, dbname: str = "postgres") -> str:
            return "534000|295000|4"

    out = await_vacuum(Stuck(), "orch8", limit_s=1.5)  # type: ignore[arg-type]
    assert not out["vacuumed"] and out["dead"] == 295_000


def test_cluster_cpu_counts_the_work_of_backends_that_already_ended() -> None:
    from orch8bench.env import PgCluster, cluster_cpu_seconds

    cluster = PgCluster().init()
    try:
        before = cluster_cpu_seconds(cluster)
        # psql's backend does the work and exits: once the postmaster has reaped it (soon
        # after psql returns), its CPU is in the postmaster's cutime
        cluster.psql("SELECT count(*) FROM generate_series(1, 3000000)")
        deadline = time.monotonic() + 5
        spent = cluster_cpu_seconds(cluster) - before
        while spent < 0.05 and time.monotonic() < deadline:
            time.sleep(0.05)
            spent = cluster_cpu_seconds(cluster) - before
    finally:
        cluster.destroy()
    assert spent >= 0.05, spent


def test_peer_table_adds_postgresql_cpu_and_our_own_row() -> None:
    res = _result(30_000.0, 10.0, 105.0)
    res["pg"][1].update(cpu_us_per_task=70.0, db_us_per_task=110.0)
    res["peers"] = [{"peer": "g", "median": 14_000.0, "spread_pct": 5.0, "cpu_us_per_task": 56.0,
                     "db_us_per_task": 60.0, "settings": "s"}]  # fmt: skip
    text = report.render(res)
    assert "| g | 14,000 | 5.0 | 0.86x | 56 | 60 | 116 | 1.55x | s |" in text
    assert (
        "| ours: server, raw client at batch 100 | 12,000 | 1.0 | 1.00x | 70 | 110 | 180 | 1.00x |"
        in text
    )
    assert "PostgreSQL CPU us/task" in text  # the PostgreSQL end-to-end table's column


def test_render_says_postgresql_runs_on_its_autovacuum_defaults() -> None:
    text = report.render(_result(30_000.0, 10.0, 105.0))
    section = text[text.index("### PostgreSQL") :]
    assert "`autovacuum_naptime` 60 s" in section[:2000], section[:2000]
    assert "results/2026-11-28-pg-autovacuum.md" in section[:2000]
