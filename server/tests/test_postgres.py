"""PostgreSQL-only behaviour: migrations, the claim and completion plans, outages, dropped
listeners, replicas and stale controls. The contract every backend keeps is tested by
storage_contract/."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from conftest import assert_problem, eventually, launch, stop_server
from pg_cluster import PgCluster

from orch8_server.lifecycle.tasks import new_task_row
from orch8_server.storage.base import ClaimParams
from orch8_server.storage.postgres import PgStorage
from orch8_server.storage.postgres_claim import claim_sql
from orch8_server.storage.postgres_schema import LATEST, migrate
from orch8_server.storage.postgres_tx import _COMPLETE_RUNNING
from orch8_server.testing import RunningServer


@pytest.fixture(scope="module")
def own_pg() -> Iterator[PgCluster]:
    """A cluster of our own: these tests stop and restart it."""
    cluster = PgCluster().init()
    yield cluster
    cluster.destroy()


@pytest.fixture
def replicas(own_pg: PgCluster, tmp_path: Path, name: str) -> Iterator[list[RunningServer]]:
    url = own_pg.create_database(name)
    servers = [launch(url, tmp_path / f"r{i}.log") for i in range(2)]
    yield servers
    for s in servers:
        stop_server(s)


def test_migrations_are_idempotent_and_safe_when_replicas_start_together(
    own_pg: PgCluster, name: str
) -> None:
    url = own_pg.create_database(name)

    async def run() -> list[int]:
        conns = [await asyncpg.connect(url) for _ in range(4)]
        try:
            first = await asyncio.gather(*(migrate(c) for c in conns))
            again = await migrate(conns[0])
            return [*first, again]
        finally:
            for c in conns:
                await c.close()

    applied = asyncio.run(run())
    assert sorted(applied) == [0, 0, 0, 0, LATEST]  # one replica migrated, nobody twice
    versions = own_pg.psql(
        "SELECT string_agg(version::text, ',' ORDER BY version) FROM orch8_schema_migrations", name
    )
    assert versions == ",".join(str(v) for v in range(1, LATEST + 1))


def test_claim_reads_only_claimable_rows_when_finished_rows_pile_up(
    own_pg: PgCluster, name: str
) -> None:
    """The claim walks the partial index in claim order: with 300,000 finished rows it
    touches a handful of pages, not the finished rows (a claim ordered by a key the index
    does not lead with sorts every pending row and slows down as rows pile up)."""
    own_pg.create_database(name)

    async def run() -> str:
        conn = await asyncpg.connect(own_pg.url(name))
        try:
            await migrate(conn)
            fill = (
                "INSERT INTO tasks (id, handler_name, queue_name, status, priority, params, "
                "context, headers, attempt, max_attempts, retry, run_at, created_at, updated_at) "
                "SELECT 't' || g || $1 || $2, $2, 'default', $1, g % 3, '{}', '{}', '{}', 0, 3, '{}', "
                "0, 0, 0 FROM generate_series(1, $3) g"
            )
            await conn.execute(fill, "completed", "h", 300_000)
            await conn.execute(fill, "pending", "h", 20_000)
            await conn.execute(fill, "pending", "other", 20_000)
            await conn.execute("VACUUM ANALYZE tasks")
            plan = await conn.fetch(
                "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + claim_sql(False),
                "default",
                10,
                1,
                1000,
                "w",
                [f"l{i}" for i in range(10)],
                ["h"],
                "default",  # the tenant (P-TEN-3), leading the claim index
            )
            return "\n".join(r[0] for r in plan)
        finally:
            await conn.close()

    plan = asyncio.run(run())
    assert "Index Scan using tasks_claim_handler" in plan, plan
    assert "Seq Scan" not in plan and "Bitmap" not in plan, plan
    hits = [
        int(w.split("=")[1])
        for line in plan.splitlines()
        if "Buffers:" in line
        for w in line.split()
        if w.startswith("hit=")
    ]
    assert max(hits) < 1000, plan  # a scan past 300,000 finished rows touches thousands


def test_completion_probes_each_task_even_when_statistics_saw_no_running_task(
    own_pg: PgCluster, name: str
) -> None:
    """A batch completion looks each item up by its task, whatever the statistics say.

    Statistics taken while no task ran estimate one running row: the completion joined on
    id with `status = 'running'` then scanned every running task of the tenant through a
    partial index and re-read the items for each (23 ms per 100 items at 300-400 running
    tasks, growing with both). Run seven times as one prepared statement, so the plans
    checked include a generic plan if PostgreSQL switches to one after five executions."""
    own_pg.create_database(name)

    async def run() -> list[str]:
        conn = await asyncpg.connect(own_pg.url(name))
        try:
            await migrate(conn)
            await conn.execute(
                "INSERT INTO tasks (id, tenant, handler_name, queue_name, status, priority, "
                "params, context, headers, attempt, max_attempts, retry, run_at, created_at, "
                "updated_at, lease_id) SELECT 't' || g, 'default', 'h', 'q', 'completed', 0, "
                "'{}', '{}', '{}', 1, 3, '{}', 0, 0, 0, 'l' || g FROM generate_series(1, 50000) g"
            )
            await conn.execute("VACUUM ANALYZE tasks")  # statistics: nothing running
            await conn.execute(
                "UPDATE tasks SET status = 'running', lease_started_at = 0 WHERE seq > 49600"
            )
            ids = [f"t{g}" for g in range(49901, 50001)]
            plans = []
            for _ in range(7):
                tx = conn.transaction()
                await tx.start()
                rows = await conn.fetch(
                    "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + _COMPLETE_RUNNING,
                    ids, [f"l{i[1:]}" for i in ids], ["{}"] * len(ids), 1, "default",
                )  # fmt: skip
                await tx.rollback()
                plans.append("\n".join(r[0] for r in rows))
            return plans
        finally:
            await conn.close()

    for plan in asyncio.run(run()):
        assert "Update on tasks" in plan and "rows=100" in plan, plan
        assert "tasks_running_queue" not in plan and "Join Filter" not in plan, plan
        assert "Seq Scan on tasks" not in plan, plan


def test_database_restart_answers_503_then_recovers_with_nothing_lost(
    own_pg: PgCluster, replicas: list[RunningServer], name: str
) -> None:
    a, b = replicas
    with httpx.Client(base_url=a.url, timeout=10) as api:
        task = api.post("/tasks", json={"handler_name": name}).json()
        own_pg.stop("fast")
        try:
            started = time.monotonic()
            body = assert_problem(api.get(f"/tasks/{task['id']}"), 503, "unavailable")
            assert "Retry-After" in api.get(f"/tasks/{task['id']}").headers, body
            assert_problem(api.get("/health/ready"), 503, "unavailable")
            poll = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 5000})
            assert_problem(poll, 503, "unavailable")
            assert_problem(api.post("/tasks", json={"handler_name": name}), 503, "unavailable")
            assert time.monotonic() - started < 8  # failed fast, no hang
        finally:
            own_pg.start()
        eventually(lambda: api.get("/health/ready").status_code == 200, timeout=15)
        assert api.get(f"/tasks/{task['id']}").json()["status"] == "pending"
    with httpx.Client(base_url=b.url, timeout=10) as other:
        eventually(lambda: other.get("/health/ready").status_code == 200, timeout=15)
        claimed = other.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 0})
        assert claimed.status_code == 200 and claimed.json()["id"] == task["id"]


def test_dropped_listener_is_re_established_and_wake_ups_cross_replicas_again(
    own_pg: PgCluster, replicas: list[RunningServer], name: str
) -> None:
    a, b = replicas
    listeners = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'orch8-listen'"
    eventually(lambda: own_pg.psql(listeners) == "2", timeout=10)
    own_pg.psql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE application_name LIKE 'orch8-%'"
    )
    eventually(lambda: own_pg.psql(listeners) == "2", timeout=15)
    with (
        httpx.Client(base_url=a.url, timeout=15) as api_a,
        httpx.Client(base_url=b.url, timeout=15) as api_b,
    ):
        eventually(lambda: api_a.get("/health/ready").status_code == 200, timeout=10)
        got: list[tuple[float, httpx.Response]] = []

        def wait_on_b() -> None:
            r = api_b.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 8000})
            got.append((time.monotonic(), r))

        waiter = threading.Thread(target=wait_on_b)
        waiter.start()
        eventually(lambda: "orch8_polls_waiting 1.0" in api_b.get("/metrics").text, timeout=5)
        sent = time.monotonic()
        task = api_a.post("/tasks", json={"handler_name": name}).json()
        waiter.join(10)
    ((arrived, response),) = got
    assert response.status_code == 200 and response.json()["id"] == task["id"]
    assert arrived - sent < 0.5  # NOTIFY, not a poll interval


def test_active_pollers_are_counted_across_replicas(
    replicas: list[RunningServer], name: str
) -> None:
    """P-OBS-1: a worker polling replica B counts on replica A's GET /queues."""
    a, b = replicas
    with (
        httpx.Client(base_url=a.url, timeout=10) as api_a,
        httpx.Client(base_url=b.url, timeout=10) as api_b,
    ):
        poll = {"handler_names": [name], "worker_id": "remote-poller", "wait_ms": 0}
        assert api_b.post("/workers/tasks/poll", json=poll).status_code == 204

        def pollers_on_a() -> int:
            rows = api_a.get("/queues").json()["queues"]
            return sum(r["active_pollers"] for r in rows if r["handler_name"] == name)

        assert eventually(pollers_on_a, timeout=5) == 1


def test_scheduled_task_promoted_on_one_replica_wakes_a_poll_on_another(
    replicas: list[RunningServer], name: str
) -> None:
    """P-STATE-2 + P-POLL-3: A's timer promotes the task; B's waiting poll gets it at once."""
    a, b = replicas
    with (
        httpx.Client(base_url=a.url, timeout=15) as api_a,
        httpx.Client(base_url=b.url, timeout=15) as api_b,
    ):
        got: list[tuple[float, httpx.Response]] = []

        def wait_on_b() -> None:
            r = api_b.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 8000})
            got.append((time.monotonic(), r))

        waiter = threading.Thread(target=wait_on_b)
        waiter.start()
        eventually(lambda: "orch8_polls_waiting 1.0" in api_b.get("/metrics").text, timeout=5)
        sent = time.monotonic()
        task = api_a.post("/tasks", json={"handler_name": name, "delay_ms": 600}).json()
        assert task["status"] == "scheduled"
        waiter.join(10)
    ((arrived, response),) = got
    assert response.status_code == 200 and response.json()["id"] == task["id"]
    # Due at 0.6 s; the reaper's fallback sweep (FAST: 50 ms) would also be quick, so
    # allow it, but not a long-poll timeout or a poll interval.
    assert 0.55 < arrived - sent < 1.1


def test_a_plain_claim_never_passes_a_control_this_replica_has_not_heard_of(
    new_database: Callable[[], str],
) -> None:
    """P-CTRL-1, P-CTRL-2 across replicas: the uncapped claim (a replica whose cached
    controls are stale) still skips paused and capped queues and capped handlers in its
    SQL. Capped claims and label routing are the contract suite's (storage_contract/)."""
    url = new_database()

    async def main() -> None:
        storage = PgStorage(url, pool_size=2)
        await storage.open()
        try:
            async with storage.transaction() as tx:
                for queue, handler in [("pq", "h"), ("cq", "h"), ("default", "ch")] * 3:
                    await tx.insert_task(
                        new_task_row({"handler_name": handler, "queue_name": queue}, 1_000)
                    )
            await storage.set_queue_control("default", "pq", {"paused": True, "paused_at": 1}, 1)
            await storage.set_queue_control("default", "cq", {"max_running": 2}, 1)
            await storage.set_handler_control("default", "ch", 1, 1)
            lease = iter(range(1000)).__next__

            async def claim(queue: str, handlers: list[str] | None) -> int:
                params = ClaimParams(
                    "default", queue, handlers, 5, 2_000, 500, "w", lambda: f"l{lease()}"
                )
                return len((await storage.claim(params))[0])

            assert await claim("pq", None) == 0
            assert await claim("cq", ["h"]) == 0
            assert await claim("default", None) == 0
            assert await claim("default", ["ch"]) == 0
            await storage.set_queue_control("default", "pq", {"paused": False}, 2)
            assert await claim("pq", None) == 3  # the guard reads the stored controls
        finally:
            await storage.close()

    asyncio.run(main())
