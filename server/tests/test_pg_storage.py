"""The PostgreSQL backend's round-trip savings, driven directly (no HTTP): a transaction
that only writes one statement sends no BEGIN/COMMIT and is still atomic, a transaction
that reads begins first, and claims run in autocommit with synchronous_commit off."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import asyncpg
import pytest

from orch8_server.lifecycle.tasks import new_task_row
from orch8_server.storage.base import ClaimParams
from orch8_server.storage.postgres import PgStorage
from orch8_server.storage.postgres_claim import PENDING_HANDLERS, claim_sql
from orch8_server.storage.postgres_tx import _COMPLETE_ALONE, _COMPLETE_RUNNING, _TASKS


@contextlib.asynccontextmanager
async def _opened(url: str) -> AsyncIterator[PgStorage]:
    storage = PgStorage(url, pool_size=2)
    await storage.open()
    try:
        yield storage
    finally:
        await storage.close()


def _row(handler: str = "h", key: str | None = None) -> dict[str, Any]:
    return new_task_row({"handler_name": handler, "idempotency_key": key}, 1_000)


def test_write_only_transactions_skip_begin_and_stay_atomic(
    new_database: Callable[[], str],
) -> None:
    url = new_database()

    async def main() -> None:
        async with _opened(url) as storage:
            rows = [_row() for _ in range(3)]
            async with storage.transaction() as tx:
                for r in rows:
                    await tx.insert_task(r)
                lazy = tx
            assert lazy._tx is None  # no BEGIN was sent: one executemany did it all
            for r in rows:
                assert await storage.get_task(r["id"]) is not None

            # Atomic without BEGIN: a batch whose second row breaks a constraint leaves
            # no row behind (asyncpg's executemany is one implicit transaction).
            bad = [_row(), {**_row(), "id": rows[0]["id"]}]
            with pytest.raises(asyncpg.UniqueViolationError):
                async with storage.transaction() as tx:
                    for r in bad:
                        await tx.insert_task(r)
            assert await storage.get_task(bad[0]["id"]) is None

            async with storage.transaction() as tx:
                await tx.get_task(rows[0]["id"])  # a read: BEGIN first (FOR UPDATE needs it)
                assert tx._tx is not None

    asyncio.run(main())


def test_claims_run_in_autocommit_without_waiting_for_the_wal(
    new_database: Callable[[], str],
) -> None:
    url = new_database()

    async def main() -> None:
        async with _opened(url) as storage:
            async with storage.transaction() as tx:
                await tx.insert_task(_row("h"))
            pools = []
            conn_of = storage._conn

            def recording(pool: Any = None) -> Any:
                pools.append(pool)
                return conn_of(pool)

            storage._conn = recording  # type: ignore[method-assign]
            claimed, expired = await storage.claim(
                ClaimParams("default", "default", ["h"], 5, 2_000, 500, "w", lambda: "l")
            )
            assert expired == 0 and [r["lease_id"] for r in claimed] == ["l"]
            assert pools == [storage._claims]  # one statement, on the claims pool
            async with storage._claims.acquire() as conn:
                assert await conn.fetchval("SHOW synchronous_commit") == "off"
            async with storage.pool.acquire() as conn:  # results stay durable
                assert await conn.fetchval("SHOW synchronous_commit") == "on"

    asyncio.run(main())


def test_a_heartbeat_updates_its_row_in_place(new_database: Callable[[], str]) -> None:
    """Issue 30: a heartbeat (lease, progress, checkpoint) changes no indexed column, so
    PostgreSQL updates the row in place (HOT) and writes no index entry. Counted by the
    transaction's own statistics, which need no wait for the collector."""
    url = new_database()

    async def main() -> None:
        async with _opened(url) as storage:
            async with storage.transaction() as tx:
                await tx.insert_task(_row("h"))
            (claimed,), _ = await storage.claim(
                ClaimParams("default", "default", ["h"], 1, 2_000, 500, "w", lambda: "l")
            )
            async with storage.transaction() as tx:
                for n in range(3):  # each as leases.heartbeat stores it
                    fields = {"lease_expires_at": 5_000 + n, "updated_at": 2_000 + n,
                              "progress": {"n": n}, "checkpoint": {"at": n}}  # fmt: skip
                    await tx.update_task(claimed["id"], fields)  # type: ignore[arg-type]
                await tx.flush()
                conn = await tx.ready()
                counts = await conn.fetchrow(
                    "SELECT pg_stat_get_xact_tuples_updated('tasks'::regclass) AS updated, "
                    "pg_stat_get_xact_tuples_hot_updated('tasks'::regclass) AS hot"
                )
            assert (counts["updated"], counts["hot"]) == (3, 3)
            row = await storage.get_task(claimed["id"])
            assert row is not None and row["lease_expires_at"] == 5_002

    asyncio.run(main())


def test_an_advance_that_leaves_an_instance_running_updates_it_in_place(
    new_database: Callable[[], str],
) -> None:
    """Issue 30: a workflow advance stores its instance's new state; while the instance
    keeps running no indexed column changes, and the page keeps room for the new version
    (schema 15's fillfactor), so PostgreSQL updates in place (HOT) and writes no entry
    into the instance's indexes. Two rounds, each its own transaction as each advance is:
    the second finds the first round's dead versions and prunes them for room."""
    url = new_database()
    pad = "x" * 900  # a 3-step instance's state is about 1 KB

    def instance(n: int) -> dict[str, Any]:
        return {"id": f"i{n}", "tenant": "default", "sequence": "s", "version": 1,
                "status": "running", "input": {}, "output": None, "error": None,
                "state": {"run": 1, "steps": {"a": None}, "pad": pad},
                "idempotency_key": None, "created_at": 1, "updated_at": 1,
                "finished_at": None, "concurrency_key": None, "max_concurrency": None}  # fmt: skip

    async def main() -> None:
        async with _opened(url) as storage:
            async with storage.transaction() as tx:
                for n in range(60):
                    await tx.workflows.add_instance(instance(n))  # type: ignore[arg-type]
            for step in ("a", "b"):
                async with storage.transaction() as tx:
                    read = await tx.workflows.instances([f"i{n}" for n in range(60)])
                    for inst in read.values():
                        inst["state"]["steps"][step] = f"task-{step}"
                        inst["updated_at"] += 1
                        await tx.workflows.update_instance(inst)
                    conn = await tx.ready()
                    counts = await conn.fetchrow(
                        "SELECT pg_stat_get_xact_tuples_updated('instances'::regclass) AS n, "
                        "pg_stat_get_xact_tuples_hot_updated('instances'::regclass) AS hot"
                    )
                # The session's counts not flushed yet may include the round before.
                assert counts["n"] in (60, 120) and counts["hot"] == counts["n"], (step, counts)
            async with storage.transaction() as tx:
                again = await tx.workflows.instances(["i7"])
            assert again["i7"]["state"]["steps"] == {"a": "task-a", "b": "task-b"}

    asyncio.run(main())


# B-tree leaf inserts into the indexes of `tasks` in a WAL range: one per index entry
# written (a split carries one). The WAL is the cluster's, so other databases' and the
# catalog's records are left out by the relation each record names.
_ENTRIES = (
    "SELECT count(*) FROM pg_get_wal_records_info($1::text::pg_lsn, $2::text::pg_lsn) w "
    "WHERE w.resource_manager = 'Btree' "
    "AND w.record_type IN ('INSERT_LEAF', 'INSERT_POST', 'SPLIT_L', 'SPLIT_R') "
    "AND EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = 'tasks'::regclass "
    "AND w.block_ref LIKE '%/' || (SELECT oid FROM pg_database "
    "WHERE datname = current_database()) || '/' || pg_relation_filenode(i.indexrelid) || ' %')"
)


def test_index_entries_a_task_writes(new_database: Callable[[], str]) -> None:
    """Issue 30's stored model, counted exactly from the WAL: the index entries one task
    writes at its enqueue, claim and completion. Each is a cost every task pays, so an
    index added to tasks has to show up here (and earn its place in `make bench`).
    Enqueue: tasks_pkey, tasks_claim_handler, tasks_waiting_seq; claim: tasks_pkey,
    tasks_worker_seq, tasks_running_queue; completion: tasks_pkey, tasks_worker_seq,
    tasks_completed_seq (no attempt row: P-DONE-1). Before issue 30's schema 12-14 and
    the unstored success: 5 + 6 + 3 + 1; before schema 18 (tasks_claim_any) 4 + 3 + 3."""
    url = new_database()

    async def main() -> None:
        admin = await asyncpg.connect(url)
        async with _opened(url) as storage:
            await admin.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
            lsn = [await admin.fetchval("SELECT pg_current_wal_insert_lsn()::text")]
            async with storage.transaction() as tx:
                await tx.insert_task(_row("h"))
            lsn.append(await admin.fetchval("SELECT pg_current_wal_insert_lsn()::text"))
            (claimed,), _ = await storage.claim(
                ClaimParams("default", "default", ["h"], 1, 2_000, 500, "w", lambda: "l")
            )
            lsn.append(await admin.fetchval("SELECT pg_current_wal_insert_lsn()::text"))
            async with storage.transaction() as tx:
                done = await tx.complete_running("default", [(claimed["id"], "l", 1)], 3_000)
            assert len(done) == 1
            lsn.append(await admin.fetchval("SELECT pg_current_wal_insert_lsn()::text"))
            # pg_walinspect reads flushed WAL only, and the insert position read above may
            # be past the completion's commit (the server's background writes, the claim's
            # synchronous_commit off): a durable commit of its own flushes past it.
            await admin.fetchval("SELECT txid_current()")
            entries = [await admin.fetchval(_ENTRIES, a, b) for a, b in itertools.pairwise(lsn)]
            assert entries == [3, 3, 3]
        await admin.close()

    asyncio.run(main())


def test_hot_statements_are_planned_once_and_never_scan_the_tasks(
    new_database: Callable[[], str],
) -> None:
    """Plans made on an empty table, as a young database's connections make and cache
    them: the claim, the handler lookup of a claim naming none, the completion and the row
    lock are generic plans (planned once per
    connection, not per call: `$n` in the plan, not the values) that reach tasks through
    an index, on both pools; the completion probes the primary key once per item."""
    url = new_database()
    hot = {
        "claim": (
            "text, bigint, bigint, bigint, text, text[], text[], text",
            claim_sql(False),
            "'default', 1, 1000, 30000, 'w', ARRAY['l1'], ARRAY['h'], 'default'",
        ),
        "complete": (
            "text[], text[], text[], bigint, text",
            _COMPLETE_RUNNING,
            "ARRAY['t1'], ARRAY['l1'], ARRAY[NULL]::text[], 1000, 'default'",
        ),
        "complete_alone": (  # the rows that are no workflow step, first in their unit
            "text[], text[], text[], bigint, text",
            _COMPLETE_ALONE,
            "ARRAY['t1'], ARRAY['l1'], ARRAY[NULL]::text[], 1000, 'default'",
        ),
        "lock": ("text[]", _TASKS + " WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE",
                 "ARRAY['t1']"),
        "pending_handlers": ("text, text", PENDING_HANDLERS, "'default', 'default'"),
    }  # fmt: skip

    async def main() -> dict[str, str]:
        plans = {}
        async with _opened(url) as storage:
            for pool in (storage.pool, storage._claims_pool):
                assert pool is not None
                async with pool.acquire() as conn:
                    for name, (types, sql, args) in hot.items():
                        await conn.execute(f"PREPARE {name}({types}) AS {sql}")
                        async with conn.transaction():  # EXPLAIN does not run it
                            rows = await conn.fetch(f"EXPLAIN EXECUTE {name}({args})")
                        plans[f"{pool is storage.pool}:{name}"] = "\n".join(r[0] for r in rows)
        return plans

    plans = asyncio.run(main())
    for name, plan in plans.items():
        assert "Seq Scan on tasks" not in plan, (name, plan)
        assert re.search(r"\$\d", plan), (name, plan)  # the generic plan, made once
    for pool in ("True", "False"):  # a poll naming no handler: a skip scan, no table read
        assert "tasks_claim_handler" in plans[f"{pool}:pending_handlers"], plans
    for pool in ("True", "False"):  # one index probe per item, not items x rows compared
        for name in ("complete", "complete_alone"):
            complete = plans[f"{pool}:{name}"]
            assert "Index Cond: (id = c.id)" in complete and "Join Filter" not in complete, (
                name,
                complete,
            )


def test_a_lost_connection_replaces_every_pooled_connection(
    new_database: Callable[[], str],
) -> None:
    """After a connection is lost (a database restart kills them all), every pooled
    connection is replaced on its next use, rather than each failing one request."""
    url = new_database()

    async def main() -> None:
        async with _opened(url) as storage:
            async with storage._conn() as conn:
                before = await conn.fetchval("SELECT pg_backend_pid()")
            lost = await storage._unavailable(
                asyncpg.ConnectionDoesNotExistError("connection was closed")
            )
            assert "database unavailable" in str(lost)
            async with storage._conn() as conn:
                assert await conn.fetchval("SELECT pg_backend_pid()") != before

    asyncio.run(main())
