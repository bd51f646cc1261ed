"""Self-check of `python -m orch8bench.schemas` on a small run against a real PostgreSQL it
starts itself: every layout completes every task, and the accounting tells the layouts
apart the way their DDL says it must (index entries from the WAL, HOT share from the
table counters)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))

from orch8bench import schemas  # noqa: E402


def test_schemas_measures_every_layout_and_tells_them_apart() -> None:
    runs, text = schemas.main(["--tasks", "400", "--reps", "1", "--conns", "2"])
    by = {r["layout"]: r for r in runs}
    assert sorted(by) == sorted(schemas.LAYOUTS), text
    for r in runs:
        assert r["tasks"] == 400 and r["tasks_per_s"] > 0 and r["wal_bytes"] > 0, r
        assert r["backend_us"] >= 0 and r["cluster_us"] >= r["backend_us"] - 1, r
    # Per task, from the DDL: A writes 5 entries at enqueue, 6 at the (non-HOT) claim, 3 at
    # completion and 1 attempt; D 3 + 1 body, 1 at the claim, 2 in `done`, 1 attempt; E as
    # D without the attempt; T (today's) 3 at enqueue (id, claim, waiting list), 3 at the
    # claim (id, worker, running) and 3 at completion (id, worker, completed list); the minimal table 2 at insert, 1 per update. Page splits
    # carry their entry too; an autoanalyze in the window adds a few catalog entries.
    expected = {
        "A": 15,
        "T": 9,
        "B": 15,
        "P": 15,
        "C": 8,
        "D": 8,
        "E": 7,
        "F": 7,
        "G": 10,
        "H": 8,
        "M": 4,
    }
    for name, entries in expected.items():
        assert abs(by[name]["index_entries"] - entries) < 0.25, (name, text)
    # A's claim and completion rewrite the row (status indexed); C's claim is HOT.
    assert by["A"]["hot_share"] == 0 and by["A"]["updates_per_task"] == 2, text
    assert by["C"]["hot_share"] > 0.9 and by["C"]["updates_per_task"] == 1, text
    assert "| A | " in text and "| 1.00 |" in text and "| M | " in text


def test_schemas_prefill_and_settings_are_applied_and_said() -> None:
    runs, text = schemas.main(
        ["--tasks", "300", "--reps", "1", "--conns", "1", "--only", "T", "--prefill", "500",
         "--pg-setting", "autovacuum_naptime=5"]
    )  # fmt: skip
    # The prefill's tasks are not measured: the window holds the 300 only.
    assert [r["layout"] for r in runs] == ["T"] and runs[0]["tasks"] == 300, runs
    assert "autovacuum_naptime=5, after a prefill of 500 tasks" in text, text


def test_schemas_refuses_an_unknown_layout() -> None:
    with pytest.raises(SystemExit):
        schemas.main(["--only", "T,Z"])
