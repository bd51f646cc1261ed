"""The SQLite backend's own mechanics, driven directly (no HTTP): transactions of one loop
turn share one COMMIT, each rolls back alone, nothing is acknowledged before it is
committed, reads see committed data only; WAL checkpoints run on their own thread; its
migrations and completion plan. What every
backend must do is the contract suite's (storage_contract/)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from orch8_server.lifecycle.tasks import new_task_row
from orch8_server.storage.base import ClaimParams, TaskFilter
from orch8_server.storage.sqlite import SqliteStorage
from orch8_server.storage.sqlite_checkpoint import Checkpointer
from orch8_server.storage.sqlite_schema import MIGRATIONS, SCHEMA_VERSION, migrate
from orch8_server.storage.sqlite_tx import _complete_statement


class Boom(Exception):
    pass


def _row(handler: str = "h") -> dict[str, Any]:
    return new_task_row({"handler_name": handler, "params": {"n": 1}}, 1_000)


def _committed_ids(path: Path) -> set[str]:
    """What another connection (a restarted process) sees: committed rows only."""
    with sqlite3.connect(path) as c:
        return {r[0] for r in c.execute("SELECT id FROM tasks")}


def test_one_turn_shares_a_commit_and_a_failure_rolls_back_alone(tmp_path: Path) -> None:
    path = tmp_path / "g.db"
    rows = [_row() for _ in range(3)]

    async def main() -> None:
        storage = SqliteStorage(str(path))
        await storage.open()
        commits = []
        real_commit = storage._commit_group

        def counting_commit() -> None:
            commits.append(storage._group is not None)
            real_commit()

        storage._commit_group = counting_commit  # type: ignore[method-assign]

        async def insert(row: dict[str, Any], fail: bool) -> str:
            async with storage.transaction() as tx:
                await tx.insert_task(row)
                if fail:
                    raise Boom
            # Acknowledged: another connection must see it now.
            assert row["id"] in _committed_ids(path)
            return str(row["id"])

        results = await asyncio.gather(
            insert(rows[0], False), insert(rows[1], True), insert(rows[2], False),
            return_exceptions=True,
        )  # fmt: skip
        assert results[0] == rows[0]["id"] and results[2] == rows[2]["id"]
        assert isinstance(results[1], Boom)
        assert commits == [True]  # three transactions, one COMMIT
        await storage.close()

    asyncio.run(main())
    assert _committed_ids(path) == {rows[0]["id"], rows[2]["id"]}


def test_a_read_outside_a_transaction_waits_for_the_commit(tmp_path: Path) -> None:
    async def main() -> None:
        storage = SqliteStorage(str(tmp_path / "r.db"))
        await storage.open()
        row = _row()

        async def writer() -> None:
            async with storage.transaction() as tx:
                await tx.insert_task(row)

        async def reader() -> Any:
            # Runs right after the writer's block, before the group's COMMIT task.
            assert storage._group is not None
            seen = await storage.get_task(row["id"])
            assert storage._group is None  # it waited for the COMMIT before reading
            return seen

        _, seen = await asyncio.gather(writer(), reader())
        assert seen is not None and seen["params"] == {"n": 1}
        await storage.close()

    asyncio.run(main())


def test_committed_pages_reach_the_database_file_off_the_event_loop(tmp_path: Path) -> None:
    """The Checkpointer's thread copies the WAL into the database file after commits, well
    before the writer's own checkpoint (10,000 pages) would; close() stops the thread."""
    path = tmp_path / "c.db"

    async def main() -> None:
        storage = SqliteStorage(str(path))
        await storage.open()
        checkpointer = storage._checkpointer
        assert checkpointer is not None and checkpointer.alive
        before = path.stat().st_size
        for _ in range(20):  # ~400 pages: 4% of the writer's own threshold
            async with storage.transaction() as tx:
                for _ in range(50):
                    await tx.insert_task(
                        new_task_row({"handler_name": "h", "params": {"pad": "x" * 400}}, 1)
                    )
        deadline = time.monotonic() + 10
        while checkpointer.passes == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # the size grows while a pass copies: wait for its end
        assert checkpointer.passes >= 1 and checkpointer.last is not None
        assert path.stat().st_size > before, "no page reached the database file"
        await storage.close()
        assert not checkpointer.alive
        assert "orch8-sqlite-checkpoint" not in {t.name for t in threading.enumerate()}

    asyncio.run(main())


def test_a_failed_checkpoint_is_logged_with_its_cause_and_the_next_one_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Flaky:
        calls = 0

        def execute(self, sql: str) -> Any:
            assert sql == "PRAGMA wal_checkpoint(PASSIVE)"
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise sqlite3.OperationalError("disk I/O error")
            return self

        def fetchone(self) -> tuple[int, int, int]:
            return (0, 12, 12)

        def close(self) -> None:
            pass

    caplog.set_level(logging.WARNING, logger="orch8.storage.sqlite")
    checkpointer = Checkpointer(lambda: Flaky(), interval_s=0.001)  # type: ignore[arg-type, return-value]
    deadline = time.monotonic() + 10
    while checkpointer.passes == 0 and time.monotonic() < deadline:
        checkpointer.poke()
        time.sleep(0.005)
    checkpointer.stop()
    assert checkpointer.passes >= 1 and checkpointer.last == (0, 12, 12)
    failed = [r for r in caplog.records if r.getMessage().startswith("WAL checkpoint failed")]
    assert len(failed) == 1 and "disk I/O error" in failed[0].cause  # type: ignore[attr-defined]
    assert not checkpointer.alive


def _at_version(c: sqlite3.Connection, version: int) -> None:
    """A file of the schema of `version` (its first `version` migrations), as written then."""
    for step in MIGRATIONS[:version]:
        for statement in step.split(";") if isinstance(step, str) else step:
            if statement.strip():
                c.execute(statement)
    c.execute(f"PRAGMA user_version = {version}")


def _store_task(c: sqlite3.Connection, handler: str, **fields: Any) -> None:
    """A new task of `handler`, `fields` overriding its columns, written as an older
    server's schema holds it (JSON columns as text)."""
    row: dict[str, Any] = {**new_task_row({"handler_name": handler, "params": {}}, 1), **fields}
    values = [orjson.dumps(v).decode() if isinstance(v, dict) else v for v in row.values()]
    marks = ", ".join("?" * len(row))
    c.execute(f"INSERT INTO tasks ({', '.join(row)}) VALUES ({marks})", values)


def _index_names(path: Path) -> set[str]:
    """The indexes of the file once a server's start-up brought it to SCHEMA_VERSION."""
    _reopen(path)
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        return {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}


@contextlib.asynccontextmanager
async def _traced(path: Path) -> AsyncIterator[tuple[SqliteStorage, list[str]]]:
    """The storage of `path`, open, and the statements it runs (their values bound)."""
    storage = SqliteStorage(str(path))
    await storage.open()
    statements: list[str] = []
    storage.c.set_trace_callback(statements.append)
    try:
        yield storage, statements
    finally:
        storage.c.set_trace_callback(None)
        await storage.close()


def _plan(storage: SqliteStorage, sql: str) -> list[str]:
    return [r[3] for r in storage.c.execute("EXPLAIN QUERY PLAN " + sql)]


def _reopen(path: Path) -> None:
    """Open and close the file as a server's start-up does: it migrates to SCHEMA_VERSION."""

    async def reopen() -> None:
        storage = SqliteStorage(str(path))
        await storage.open()
        await storage.close()

    asyncio.run(reopen())


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    with sqlite3.connect(path) as c:
        c.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(RuntimeError, match="schema version"):
        asyncio.run(SqliteStorage(str(path)).open())


def test_schema_v6_drops_the_instance_event_trigger_and_keeps_its_events(tmp_path: Path) -> None:
    """P-WF-5, issue 15: a v5 file (trigger on every status change) opens as v6 without the
    trigger; events the trigger wrote before stay for the pump."""
    path = tmp_path / "v5.db"
    with sqlite3.connect(path) as c:
        _at_version(c, 5)
        c.execute(
            "INSERT INTO instance_events (tenant, instance_id, task_id, fire_at) "
            "VALUES ('default', 'i-old', 't-old', 0)"
        )
        assert c.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger'").fetchone()[0]

    _reopen(path)
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert (
            c.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger'").fetchone()[0]
            == 0
        )
        assert c.execute("SELECT instance_id FROM instance_events").fetchall() == [("i-old",)]


def test_completion_probes_each_task_even_when_statistics_saw_no_running_task() -> None:
    """Statistics from `PRAGMA optimize` (run at close) that make (tenant, status) look
    selective must not turn a batch completion into a scan of the tenant's running tasks
    per item: each item is one probe of the unique index on id."""
    conn = sqlite3.connect(":memory:")
    migrate(conn, ":memory:")
    conn.execute("ANALYZE")
    conn.execute("DELETE FROM sqlite_stat1")
    conn.executemany(
        "INSERT INTO sqlite_stat1 VALUES ('tasks', ?, ?)",
        [(None, "500000"), ("tasks_running_queue", "2 2 1 1"),
         ("sqlite_autoindex_tasks_1", "500000 1"),
         ("tasks_status_seq", "500000 500000 100000 1")],
    )  # fmt: skip
    conn.execute("ANALYZE sqlite_schema")  # load the statistics above
    args = ["t", "l", "{}"] * 3 + [1, 1, "default"]
    plan = [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + _complete_statement(3), args)]
    assert "SEARCH tasks USING INDEX sqlite_autoindex_tasks_1 (id=?)" in plan, plan


def test_schema_v8_adds_keys_and_rate_limits_and_keeps_every_task(tmp_path: Path) -> None:
    """P-KEY-1: a v7 file with tasks opens as v8; each task is as it was, without a key,
    and the key's indexes exist (held tasks stay out of the claim indexes, P-KEY-2)."""
    path = tmp_path / "v7.db"
    with sqlite3.connect(path) as c:
        _at_version(c, 7)
        c.executemany(
            "INSERT INTO tasks (id, handler_name, queue_name, status, priority, params, "
            "context, headers, attempt, max_attempts, retry, run_at, created_at, updated_at) "
            "VALUES (?, 'h', 'q', ?, 0, '{}', '{}', '{}', 0, 3, '{}', 0, 0, 0)",
            [(f"t{i}", ("pending", "completed", "scheduled")[i % 3]) for i in range(30)],
        )
        before = c.execute("SELECT * FROM tasks ORDER BY seq").fetchall()

    _reopen(path)
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        after = c.execute("SELECT * FROM tasks ORDER BY seq").fetchall()
        assert [row[:-3] for row in after] == before
        assert {row[-3:] for row in after} == {(None, None, None)}  # keys, rate limit key
        indexes = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"tasks_held", "tasks_key_slots", "tasks_good_until", "tasks_rate_held"} <= indexes
        assert c.execute("SELECT COUNT(*) FROM rate_limits").fetchone()[0] == 0


def test_schema_v9_adds_instance_keys_and_keeps_every_instance(tmp_path: Path) -> None:
    """P-KEY-7: a v8 file with instances opens as v9; each instance is as it was, without a
    key, and the code of now reads it and counts its key's slots by the new index."""
    path = tmp_path / "v8.db"
    with sqlite3.connect(path) as c:
        _at_version(c, 8)
        c.executemany(
            "INSERT INTO instances (id, tenant, sequence, version, status, input, state, "
            "created_at, updated_at) VALUES (?, 'default', 's', 1, ?, '{}', "
            '\'{"steps": [], "run": 1}\', 0, 0)',
            [(f"inst_{i}", ("running", "completed", "failed")[i % 3]) for i in range(30)],
        )
        before = c.execute("SELECT * FROM instances ORDER BY seq").fetchall()

    async def reopen() -> None:
        storage = SqliteStorage(str(path))
        await storage.open()
        try:
            async with storage.transaction() as tx:
                inst = await tx.workflows.instance("inst_3")
                assert inst is not None and inst["status"] == "running"
                assert (inst["concurrency_key"], inst["max_concurrency"]) == (None, None)
                assert await tx.workflows.instance_slots("default", "k", 2**62) == (0, 0)
        finally:
            await storage.close()

    asyncio.run(reopen())
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        after = c.execute("SELECT * FROM instances ORDER BY seq").fetchall()
        assert [row[:-2] for row in after] == before
        assert {row[-2:] for row in after} == {(None, None)}
        indexes = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert "instances_key" in indexes
        plan = c.execute(
            "EXPLAIN QUERY PLAN SELECT count(*) FROM instances WHERE tenant = 'default' "
            "AND concurrency_key = 'k' AND status IN ('running', 'held')"
        ).fetchall()
        assert any("instances_key" in row[3] for row in plan), plan


def test_schema_v11_drops_the_tenant_index_and_lists_read_each_status_in_order(
    tmp_path: Path,
) -> None:
    """A v10 file with tasks of two tenants in several statuses opens as v11 without
    tasks_tenant_seq; a tenant's list of every status reads tasks_status_seq one status at
    a time, never the whole table, and pages through the same rows as before."""
    path = tmp_path / "v10.db"
    statuses = ["pending", "completed", "running", "failed", "completed", "pending"] * 5
    with sqlite3.connect(path) as c:
        _at_version(c, 10)
        for i, status in enumerate(statuses):
            _store_task(c, "h", status=status, tenant=("default", "t2")[i % 2])
        expected = [
            r[0]
            for r in c.execute("SELECT id FROM tasks WHERE tenant = 'default' ORDER BY seq DESC")
        ]
    names = _index_names(path)  # after a start-up's migrations
    assert "tasks_tenant_seq" not in names and "tasks_status_seq" in names

    async def pages() -> tuple[list[str], list[str]]:
        async with _traced(path) as (storage, statements):
            seen: list[str] = []
            before = None
            while page := await storage.list_tasks(TaskFilter(), 4, before):
                seen += [r["id"] for r in page]
                before = page[-1]["seq"]
            listed = [sql for sql in statements if "UNION ALL" in sql]
            assert listed, statements
            return seen, _plan(storage, listed[-1])

    seen, plan = asyncio.run(pages())
    assert seen == expected
    assert sum("USING INDEX tasks_status_seq (tenant=? AND status=?" in p for p in plan) == 8, plan
    assert not any(step.startswith("SCAN tasks") for step in plan), plan


def test_schema_v12_drops_the_any_handler_claim_index_and_such_a_claim_reads_only_indexes(
    tmp_path: Path,
) -> None:
    """A v11 file with pending tasks of three handlers opens as v12 without
    tasks_claim_any; a claim that names no handler takes them in claim order across the
    handlers (P-ORDER-1), and every statement it runs reads tasks_claim_handler, none scans
    the table."""
    path = tmp_path / "v11.db"
    order = [("b", 1), ("a", 0), ("c", 1), ("a", 1), ("b", 0), ("c", 0)]  # (handler, priority)
    with sqlite3.connect(path) as c:
        _at_version(c, 11)
        for handler, priority in order:
            _store_task(c, handler, priority=priority)
        expected = [r[0] for r in c.execute("SELECT id FROM tasks ORDER BY priority, seq")]
    names = _index_names(path)  # after a start-up's migrations
    assert "tasks_claim_any" not in names and "tasks_claim_handler" in names

    async def claim_all() -> tuple[list[str], list[str]]:
        leases = (f"lease_{i}" for i in range(100))
        params = ClaimParams(tenant="default", queue_name="default", handler_names=None,
                             limit=4, now=2, lease_ms=1000, worker_id="w",
                             new_lease_id=leases.__next__)  # fmt: skip
        async with _traced(path) as (storage, statements):
            first, _ = await storage.claim(params)
            reads = [sql for sql in statements if sql.lstrip().startswith(("SELECT", "WITH"))]
            rest, _ = await storage.claim(params)
            plans = [step for sql in reads for step in _plan(storage, sql)]
        return [r["id"] for r in [*first, *rest]], plans

    claimed, plans = asyncio.run(claim_all())
    assert claimed == expected
    assert any("tasks_claim_handler" in step for step in plans), plans
    assert not any(step.startswith("SCAN tasks") for step in plans), plans
