"""Self-checks of the River peer (bench/river, issue 30): a small run of the peer phase on a
real PostgreSQL leaves every job completed in River's own table and gives the River row of
the peers table; the summary judges ours against each peer the targets name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))

from orch8bench import report, run, verdicts  # noqa: E402
from orch8bench.env import PgCluster  # noqa: E402

TASKS, WARMUP = 300, 50


@pytest.fixture(scope="module")
def river_binary() -> Path:
    # `make -C bench setup-bench` builds it for `make bench`; `make test` has only `setup`,
    # so the self-check builds this one target (make rebuilds it only when river/ changed).
    subprocess.run(["make", "-s", "-C", str(BENCH), ".bin/river"], check=True, timeout=600)
    assert run.RIVER.is_file()
    return run.RIVER


def test_river_peer_completes_every_job_and_gets_its_row(river_binary: Path) -> None:
    assert "river" in run.PEERS  # the peer phase of `make bench` runs it
    cfg = {"peer_tasks": {"river": TASKS}, "peer_warmup": WARMUP, "reps": 1}
    cluster = PgCluster().init()
    try:
        [row] = run.peers(cluster, cfg, ("river",))
        dbs = cluster.psql("SELECT datname FROM pg_database WHERE datname LIKE 'peer_river_%'")
        [db] = dbs.split()
        states = cluster.psql("SELECT state, count(*) FROM river_job GROUP BY state", dbname=db)
    finally:
        cluster.destroy()
    assert "error" not in row, row.get("error")
    assert row["peer"] == "river" and row["tasks"] == TASKS and row["median"] > 0
    assert row["cpu_us_per_task"] > 0 and row["db_us_per_task"] > 0
    assert "MaxWorkers 2000" in row["settings"] and "riverqueue.com/docs" in row["settings"]
    # Done means done in the database: every job of the warm-up and the timed part, both
    # when the clock stopped and once the program ended.
    assert row["details"][0]["completed"] == TASKS + WARMUP
    assert states.split() == [f"completed|{TASKS + WARMUP}"], states

    res = _res(12_000.0, 70.0, 110.0)
    res["peers"] = [row]
    text = report.render(res)
    peers_table = text.split("## Peers on the same PostgreSQL", 1)[1]
    assert f"| river | {row['median']:,.0f} |" in peers_table
    summary = {r[0]: r for r in verdicts.headline(res)}
    assert summary["PostgreSQL, batch 100, tasks/s against river"][-1] == "stated"


def _res(ours: float, cpu: float, db: float) -> dict:
    b100 = {"batch": 100, "median": ours, "spread_pct": 1.0, "runs": [ours], "tasks": 10,
            "cpu_us_per_task": cpu, "db_us_per_task": db}  # fmt: skip
    return {
        "quick": True,
        "date": "2026-01-01 00:00 UTC",
        "duration_s": 1,
        "load_start": [0.5, 0.5, 0.5],
        "load_end": [0.5, 0.5, 0.5],
        "machine": {"host": "h"},
        "settings": {},
        "shape": {},
        "pg": [b100],
    }


def _peer(name: str, rate: float, cpu: float, db: float) -> dict:
    return {"peer": name, "median": rate, "spread_pct": 2.0, "cpu_us_per_task": cpu,
            "db_us_per_task": db, "settings": "s"}  # fmt: skip


def test_summary_judges_ours_against_each_peer_the_targets_name() -> None:
    col = {name: i for i, name in enumerate(verdicts.HEAD)}
    res = _res(12_000.0, 70.0, 110.0)  # 180 us of all CPU per task
    res["peers"] = [_peer("pg-boss", 9000.0, 43.0, 109.0), _peer("pgqueuer", 11_000.0, 60.0, 90.0),
                    _peer("graphile-worker", 16_000.0, 43.0, 47.0),
                    _peer("river", 20_000.0, 30.0, 50.0)]  # fmt: skip
    rows = {r[0]: r for r in verdicts.headline(res)}
    assert all(len(r) == len(verdicts.HEAD) for r in rows.values())

    def rate(peer: str) -> list[str]:
        return rows[f"PostgreSQL, batch 100, tasks/s against {peer}"]

    def cpu(peer: str) -> list[str]:
        return rows[
            f"PostgreSQL, batch 100, all CPU us/task (server + PostgreSQL) against {peer}'s "
            "per job (process + PostgreSQL)"
        ]

    assert rate("pg-boss")[col["ours / peer"]] == "1.33x" and rate("pg-boss")[-1] == "meets"
    assert rate("pgqueuer")[col["target"]] == ">= 1.2x pgqueuer"
    assert rate("pgqueuer")[-1] == "misses (91% of target)"
    assert rate("graphile-worker")[col["best peer"]] == "16,000 (graphile-worker)"
    assert rate("graphile-worker")[-1] == "misses (94% of target)"  # 0.75x of 0.8x
    assert rate("river")[col["ours / peer"]] == "0.60x" and rate("river")[-1] == "stated"
    assert cpu("graphile-worker")[col["ours"]] == "180"
    assert cpu("graphile-worker")[col["best peer"]] == "90 (graphile-worker)"
    assert cpu("graphile-worker")[col["target"]] == "<= 1x graphile-worker"
    assert cpu("graphile-worker")[-1] == "misses (200% of target)"
    assert cpu("river")[col["ours / peer"]] == "2.25x" and cpu("river")[-1] == "stated"
    assert rows["PostgreSQL, batch 100, tasks/s"][col["best peer"]] == "20,000 (river)"

    res["peers"][2] = _peer("graphile-worker", 12_000.0, 90.0, 90.0)  # 180 us: parity
    rows = {r[0]: r for r in verdicts.headline(res)}
    assert rate("graphile-worker")[-1] == "meets" and cpu("graphile-worker")[-1] == "meets"

    res["peers"][3] = {"peer": "river", "label": "peer river", "error": "exited 1"}
    rows = {r[0]: r for r in verdicts.headline(res)}
    assert rate("river")[col["best peer"]] == "river FAILED"
    assert rate("river")[-1] == cpu("river")[-1] == "not measured"
    table = report.render(res).split("## Peers on the same PostgreSQL", 1)[1]
    assert "| river | FAILED |" in table
