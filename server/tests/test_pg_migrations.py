"""PostgreSQL schema migrations from the previous schema with data in it.

A database is brought to the schema before the latest migration, filled through the
storage of that time's shape (tasks pending, running, completed, failed, scheduled, with
idempotency keys), then a server's start-up migration takes it to LATEST. Nothing is lost,
each row keeps its seq (the FIFO order), and the migrated rows are claimed, completed,
listed and deduplicated by the code of now.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import asyncpg
import pytest
from pg_cluster import PgCluster

from orch8_server.storage import postgres_schema
from orch8_server.storage.base import ClaimParams, TaskFilter
from orch8_server.storage.postgres import PgStorage
from orch8_server.storage.postgres_schema import LATEST, MIGRATIONS, migrate

FILL = (
    "INSERT INTO tasks (id, handler_name, queue_name, status, priority, params, context, "
    "headers, attempt, max_attempts, retry, run_at, created_at, updated_at, worker_id, "
    "lease_id, lease_expires_at, lease_started_at, idempotency_key) "
    "SELECT 't' || g, 'h', 'q', (ARRAY['pending','running','completed','failed','scheduled'])"
    "[1 + g % 5], 0, ('{\"g\": ' || g || '}')::json, '{}', '{}', 1, 3, '{}', "
    "CASE WHEN g % 5 = 4 THEN 9e12::bigint ELSE 0 END, g, g, "
    "CASE WHEN g % 5 = 1 THEN 'w' END, 'l' || g, "
    "CASE WHEN g % 5 = 1 THEN 9e12::bigint END, 0, 'k' || g FROM generate_series(1, 500) g"
)


FILL_INSTANCES = (
    "INSERT INTO instances (id, tenant, sequence, version, status, input, state, "
    "created_at, updated_at) SELECT 'inst_' || g, 'default', 's', 1, "
    "(ARRAY['running','completed','failed','cancelled'])[1 + g % 4], '{}', "
    '\'{"steps": [], "run": 1}\', g, g FROM generate_series(1, 200) g'
)

_DIGEST = "SELECT md5(string_agg(({row})::text, ',' ORDER BY seq)) FROM tasks t"
_INSTANCES = "SELECT md5(string_agg(({row})::text, ',' ORDER BY seq)) FROM instances t"


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    pg = PgCluster().init()
    yield pg
    pg.destroy()


async def _at_version(url: str, version: int) -> None:
    conn = await asyncpg.connect(url)
    try:
        saved = postgres_schema.MIGRATIONS
        postgres_schema.MIGRATIONS = [m for m in MIGRATIONS if m[0] <= version]
        try:
            await migrate(conn)
        finally:
            postgres_schema.MIGRATIONS = saved
        await conn.execute(FILL)
        await conn.execute(FILL_INSTANCES)
    finally:
        await conn.close()


@pytest.mark.parametrize("back", [1, 3])
def test_the_latest_migration_keeps_every_row_and_the_code_of_now_works_on_them(
    cluster: PgCluster, back: int
) -> None:
    """From the previous schema, and from three versions back (issue 30's schemas 15-17
    came in one stretch), with rows in every table."""
    db = f"from_previous_{back}"
    url = cluster.create_database(db)

    async def run() -> None:
        await _at_version(url, LATEST - back)
        before = cluster.psql(_DIGEST.format(row="to_jsonb(t)"), db)
        instances = cluster.psql(_INSTANCES.format(row="to_jsonb(t)"), db)
        storage = PgStorage(url, pool_size=2)
        await storage.open()  # migrates to LATEST, as a server's start-up does
        try:
            after = cluster.psql(_DIGEST.format(row="to_jsonb(t)"), db)
            assert after == before  # every row, every column, seq included
            after = cluster.psql(_INSTANCES.format(row="to_jsonb(t)"), db)
            assert after == instances
            # Schema 12: the lease sweep finds the running rows without tasks_leases.
            async with storage.transaction() as tx:
                expired = await tx.expired_leases(9 * 10**12, 500)
            assert len(expired) == 100 and {r["status"] for r in expired} == {"running"}
            async with storage.transaction() as tx:  # P-KEY-7's reads on migrated rows
                inst = await tx.workflows.instance("inst_4")
                assert inst is not None and inst["status"] == "running"
                assert (inst["concurrency_key"], inst["max_concurrency"]) == (None, None)
                assert await tx.workflows.instance_slots("default", "k", 2**62) == (0, 0)
            versions = cluster.psql("SELECT max(version) FROM orch8_schema_migrations",
                                    db)  # fmt: skip
            assert versions == str(LATEST)

            # Claimed in FIFO order by seq, under the new key.
            lease = iter(range(1000)).__next__
            params = ClaimParams("default", "q", ["h"], 3, 10, 60_000, "w2", lambda: f"n{lease()}")
            claimed, _ = await storage.claim(params)
            assert [r["id"] for r in claimed] == ["t5", "t10", "t15"]
            # A migrated running task completes; a completed one is not completed again.
            async with storage.transaction() as tx:
                done = await tx.complete_running(
                    "default", [("t1", "l1", "{}"), ("t2", "l2", "{}")], 20
                )
            assert [r["id"] for r in done] == ["t1"]
            # Lists by an open, an ended and the completed status.
            failed = await storage.list_tasks(TaskFilter(statuses=("failed",)), 500, None)
            assert len(failed) == 100 and failed[0]["id"] == "t498"
            completed = await storage.list_tasks(TaskFilter(statuses=("completed",)), 10, None)
            assert [r["id"] for r in completed][:2] == ["t497", "t492"]
            running = await storage.list_tasks(TaskFilter(statuses=("running",)), 500, None)
            assert len(running) == 99 + 3
            # The idempotency key still deduplicates migrated rows.
            row = dict(await storage.get_task("t7") or {})
            assert row["idempotency_key"] == "k7"
        finally:
            await storage.close()
        keys = cluster.psql(
            "SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes "
            "WHERE tablename = 'tasks' AND indexdef LIKE 'CREATE UNIQUE%'",
            db,
        )
        assert keys == "tasks_idempotency_key,tasks_pkey"

    asyncio.run(run())


def test_a_step_end_stores_no_event_and_an_expiry_stores_one_due_at_once(
    cluster: PgCluster,
) -> None:
    """Schema 16 (P-WF-5): a step task's end stores no instance event (its result path
    advances the instance in the same transaction; the trigger of schema 5 to 15 is gone),
    while an expiry, which no result path reaches, stores one due at once for the pump.
    An event stored before the upgrade stays for the pump."""
    url = cluster.create_database("step_events")

    async def run() -> None:
        storage = PgStorage(url, pool_size=2)
        await storage.open()
        try:
            insert = (
                "INSERT INTO tasks (id, handler_name, queue_name, status, priority, params, "
                "context, headers, attempt, max_attempts, retry, run_at, created_at, "
                "updated_at, tenant, good_until) VALUES ('{id}', 'h', 'q', '{status}', 0, '{{}}', "
                '\'{{"instance_id": "inst_1", "step_id": "a"}}\', \'{{}}\', 1, 3, '
                "'{{}}', 0, 0, 0, 'default', {good_until})"
            )
            cluster.psql(insert.format(id="t1", status="running", good_until="NULL"), "step_events")
            cluster.psql("UPDATE tasks SET status = 'completed' WHERE id = 't1'", "step_events")
            assert cluster.psql("SELECT count(*) FROM instance_events", "step_events") == "0"
            cluster.psql(insert.format(id="t2", status="pending", good_until="5"), "step_events")
            async with storage.transaction() as tx:
                assert await tx.expire_overdue(10) == 1
            async with storage.transaction() as tx:
                due = await tx.workflows.take_due_events(0, 10)
            assert [(e["instance_id"], e["task_id"]) for e in due] == [("inst_1", "t2")]
        finally:
            await storage.close()

    asyncio.run(run())
