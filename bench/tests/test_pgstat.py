"""Self-check of `python -m orch8bench.pgstat` on a small run against a real PostgreSQL it
starts itself: the report names the three statements of the loop, per task, and the tasks
table's updates with their HOT share."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))

from orch8bench import pgstat  # noqa: E402


def test_pgstat_reports_the_loops_statements_tables_and_indexes(tmp_path: Path) -> None:
    out = tmp_path / "pg.md"
    text = pgstat.main(
        ["--tasks", "600", "--batch", "100", "--out", str(out), "--prefill", "300",
         "--pg-setting", "autovacuum_naptime=5"]
    )  # fmt: skip
    assert out.read_text() == text
    assert re.search(r"^# PostgreSQL statements, batch 100, 600 tasks", text, re.M), text
    title = text.splitlines()[0]
    assert "after a prefill of 300 tasks, autovacuum_naptime=5" in title, title
    rows = [line for line in text.splitlines() if line.startswith("| ") and "`" in line]
    kinds = {k for k in ("INSERT INTO tasks", "WITH pick AS", "WITH c AS MATERIALIZED")
             if any(k in r for r in rows[:6])}  # fmt: skip
    assert len(kinds) == 3, rows[:6]  # enqueue, claim and completion lead the time
    # Planning has its own columns (track_planning on): per task, and plans per call.
    assert "| plan us/task | plans/call |" in text
    claim = next(r for r in rows if "WITH pick AS" in r).split(" | ")
    assert float(claim[3].replace(",", "")) >= 0 and 0 <= float(claim[4]) <= 1, claim
    tasks = re.search(r"^\| tasks \| ([\d.]+) \| ([\d.]+) \| (\S+) \|", text, re.M)
    # Inserts and updates per task; not exact: the warm-up's last tasks may finish after
    # the reset, and the measured ones before the count (the load client drains).
    assert tasks is not None and float(tasks.group(1)) >= 0.5 and float(tasks.group(2)) >= 0.5
    assert re.search(r"^\| tasks \| tasks_pkey \| [\d,]+ KiB \|", text, re.M), text
    # CPU by process kind: the backends ran the loop's statements.
    backend = re.search(r"^\| backend \| ([\d,.]+) \|$", text, re.M)
    assert backend is not None and float(backend.group(1).replace(",", "")) > 0, text
    assert "| children reaped in the window" in text, text


def test_pgstat_refuses_a_setting_without_a_value() -> None:
    with pytest.raises(SystemExit):
        pgstat.main(["--pg-setting", "autovacuum_naptime"])
