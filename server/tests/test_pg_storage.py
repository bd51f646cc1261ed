"""The PostgreSQL backend's round-trip savings, driven directly (no HTTP): a transaction
that only writes one statement sends no BEGIN/COMMIT and is still atomic, a transaction
that reads begins first, and claims run in autocommit with synchronous_commit off."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from pg_cluster import PgCluster

from orch8_server.lifecycle.tasks import new_task_row
from orch8_server.storage.postgres import PgStorage
from orch8_server.storage.postgres_tx import PgTx


def _row(handler: str = "h", key: str | None = None) -> dict[str, Any]:
    return new_task_row({"handler_name": handler, "idempotency_key": key}, 1_000)


def test_write_only_transactions_skip_begin_and_stay_atomic(
    new_database: Callable[[], str],
) -> None:
    url = new_database()

    async def main() -> None:
        storage = PgStorage(url, pool_size=2)
        await storage.open()
        try:
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
        finally:
            await storage.close()

    asyncio.run(main())


def test_claims_run_in_autocommit_without_waiting_for_the_wal(
    new_database: Callable[[], str],
) -> None:
    url = new_database()

    async def main() -> None:
        storage = PgStorage(url, pool_size=2)
        await storage.open()
        try:
            async with storage.transaction() as tx:
                await tx.insert_task(_row("h"))
            pools = []
            conn_of = storage._conn

            def recording(pool: Any = None) -> Any:
                pools.append(pool)
                return conn_of(pool)

            storage._conn = recording  # type: ignore[method-assign]
            claimed, expired = await storage.claim(
                "default", "default", ["h"], 5, 2_000, 500, "w", lambda: "l"
            )
            assert expired == 0 and [r["lease_id"] for r in claimed] == ["l"]
            assert pools == [storage._unflushed]  # one statement, on the unflushed pool
            async with storage._unflushed.acquire() as conn:
                assert await conn.fetchval("SHOW synchronous_commit") == "off"
            async with storage.pool.acquire() as conn:  # results stay durable
                assert await conn.fetchval("SHOW synchronous_commit") == "on"
        finally:
            await storage.close()

    asyncio.run(main())


def test_an_enqueue_visible_before_its_flush_is_durable_once_acknowledged() -> None:
    """P-LEASE-8: in a `flush_later` transaction, `commit_unflushed` makes the rows
    claimable without waiting for the WAL flush, and the block's exit waits for it: what
    the exit returned from survives a database crash. The WAL writer is slowed to 10 s so
    that nothing else flushes: the control row, committed the same way on the same kind
    of connection but with no exit flush, is lost to the crash, which shows that the crash
    really drops unflushed commits."""
    cluster = PgCluster(settings={"wal_writer_delay": "10000ms"}).init()
    try:
        url = cluster.create_database("orch8_flush")
        kept, lost = _row("kept"), _row("lost")

        async def write() -> None:
            storage = PgStorage(url, pool_size=2)
            await storage.open()
            try:
                async with storage.transaction(flush_later=True) as tx:
                    await tx.insert_task(kept)
                    await tx.commit_unflushed()
                    # Claimable before the flush: another connection sees the row.
                    assert await storage.get_task(kept["id"]) is not None
                async with storage._conn(storage._unflushed) as conn:
                    control = PgTx(conn)
                    await control.insert_task(lost)
                    await control.commit_unflushed()  # and no exit flush
            finally:
                storage.pool.terminate()  # no clean close (it would flush)
                storage._unflushed.terminate()

        asyncio.run(write())
        cluster.stop("immediate")  # a crash: WAL buffers in shared memory are gone
        cluster.start()

        async def read() -> tuple[bool, bool]:
            conn = await asyncpg.connect(url)
            try:
                found = {r["id"] for r in await conn.fetch("SELECT id FROM tasks")}
            finally:
                await conn.close()
            return kept["id"] in found, lost["id"] in found

        assert asyncio.run(read()) == (True, False)
    finally:
        cluster.destroy()
