"""Self-check of the workflows row (issue 16): a small run against a real server drains
every instance, and the report renders the row."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))

from orch8bench import report, verdicts  # noqa: E402
from orch8bench.env import launch_server  # noqa: E402
from orch8bench.measure import repeat  # noqa: E402
from orch8bench.workflows import Client, run_once  # noqa: E402


def test_workflow_row_drains_3_step_instances(tmp_path: Path) -> None:
    server = launch_server(str(tmp_path / "wf.db"), tmp_path, "wf-selftest")
    try:
        row = repeat("SQLite 3-step", 1, lambda: run_once(server.url, 30, workers=2),
                     "instances_per_s", server.process.pid)  # fmt: skip
        assert row["median"] > 0 and row["details"][0]["tasks"] == 90
        assert row["details"][0]["start_batch"] == 100  # POST /instances/batch (P-WF-14)
        single = run_once(server.url, 6, workers=2, start_batch=1)  # POST /instances each
        assert single["tasks"] == 18
        c = Client(server.url)
        try:
            status, body = c.call("GET", "/instances?status=completed&limit=100")
            assert status == 200 and len(body["instances"]) == 36, body
            _, queues = c.call("GET", "/queues")
        finally:
            c.close()
        assert all(q["pending"] == 0 and q["running"] == 0 for q in queues["queues"])
    finally:
        server.stop()
    row.update(instances=30, steps=3)
    text = "\n".join(report.workflow_lines({"wf_sqlite": row}))
    assert "### Workflows" in text and "SQLite 3-step" in text
    summary = {r[0]: r for r in verdicts.headline({"wf_sqlite": row})}
    wf = summary["SQLite, 3-step workflow instances/s"]
    # A loaded machine marks the number `(load x)` (verdicts.loaded): part of the expected text.
    assert wf[1] == f"{row['median']:,.0f}" + verdicts.loaded(row), wf
    assert wf[-2] == ">= 2,000" and wf[-1].startswith(("meets", "misses")), wf
    # The CPU ratio needs the batch-100 row of the same run: without it, not measured.
    share = summary["SQLite, 3-step instance CPU / batch-100 task CPU (server)"]
    assert share[-2] == "<= 4x" and share[-1] == "not measured", share
    task = {"batch": 100, "median": 1.0, "cpu_us_per_task": row["cpu_us_per_task"] * 3 / 5}
    share = {r[0]: r for r in verdicts.headline({"wf_sqlite": row, "sqlite": [task]})}[
        "SQLite, 3-step instance CPU / batch-100 task CPU (server)"]  # fmt: skip
    assert share[4] == "5.0x" and share[-1] == "misses (125% of target)", share
    # PostgreSQL counts the database's CPU on both sides when the run measured it.
    wf_pg = {"median": 1200.0, "cpu_us_per_task": 100.0, "db_us_per_task": 200.0}
    pg_task = {"batch": 100, "median": 1.0, "cpu_us_per_task": 30.0, "db_us_per_task": 70.0}
    pg = {r[0]: r for r in verdicts.headline({"wf_pg": wf_pg, "pg": [pg_task]})}
    share = pg["PostgreSQL, 3-step instance CPU / batch-100 task CPU (server + PostgreSQL)"]
    assert share[1] == "900 / 100" and share[4] == "9.0x", share
    assert pg["PostgreSQL, 3-step workflow instances/s"][-1] == "meets"
