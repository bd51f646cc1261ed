"""The backends under the contract and row builders for its tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from orch8_server.lifecycle.tasks import new_task_row
from orch8_server.storage import Storage, open_storage
from orch8_server.storage.base import ClaimParams

NOW = 1_000_000  # an instant (epoch ms) the tests count from
# Any time after every event stored so far (an expiry's is due at once, P-WF-5).
EVENTS_DUE = 2**62
TENANT = "default"
Check = Callable[[Storage], Awaitable[None]]


async def empty_pg(url: str) -> None:
    """Every table of the suite's PostgreSQL database emptied (the schema stays)."""
    conn = await asyncpg.connect(url)
    try:
        tables = await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
            "AND tablename <> 'orch8_schema_migrations'"
        )
        if tables:
            names = ", ".join(f'"{t[0]}"' for t in tables)
            await conn.execute(f"TRUNCATE {names} RESTART IDENTITY")
    finally:
        await conn.close()


class Backend:
    """One backend: `run(check)` opens a storage on an empty database, awaits
    `check(storage)` and closes it, in an event loop of its own."""

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.url = url

    def run(self, check: Check) -> None:
        async def main() -> None:
            if self.name == "postgresql":
                await empty_pg(self.url)
            storage = open_storage(self.url, pool_size=4)
            await storage.open()
            try:
                await check(storage)
            finally:
                await storage.close()

        asyncio.run(main())


def task(handler: str = "h", queue: str = "q", **fields: Any) -> dict[str, Any]:
    """A NewTaskRow of a pending task created at NOW; `fields` override any column."""
    row: dict[str, Any] = new_task_row(
        {"handler_name": handler, "queue_name": queue, "params": {"n": 1},
         "retry": {"max_attempts": 3}},
        NOW,
        tenant=TENANT,
    )  # fmt: skip
    row["retry"] = {"max_attempts": 3}  # the policy as given, not the effective one
    row["id"] = f"t-{next(_ids)}"  # ordered, readable ids (a test may pass its own)
    row.update(fields)
    return row


def running(lease: str, worker: str = "w", **fields: Any) -> dict[str, Any]:
    """A task running under `lease` since NOW, its lease expiring at NOW + 1000."""
    lease_fields = {
        "status": "running", "attempt": 1, "lease_id": lease, "worker_id": worker,
        "started_at": NOW, "lease_started_at": NOW, "lease_ms": 1000,
        "lease_expires_at": NOW + 1000,
    }  # fmt: skip
    return task(**{**lease_fields, **fields})


def worker(worker_id: str = "w", **fields: Any) -> dict[str, Any]:
    """A WorkerRow registered and last heard from at NOW; `fields` override any column."""
    row: dict[str, Any] = {
        "worker_id": worker_id,
        "state": "running",
        "directive": "running",
        "hostname": "host",
        "pid": 42,
        "handlers": ["h"],
        "queues": ["q"],
        "concurrency": 4,
        "labels": {},
        "sdk": "python/1.0",
        "registered_at": NOW,
        "last_heartbeat_at": NOW,
        "tenant": TENANT,
        "key_id": None,
    }
    row.update(fields)
    return row


def claim(
    queue: str = "q", handlers: list[str] | None = None, limit: int = 10, **kw: Any
) -> ClaimParams:
    """A claim at NOW + 1 by worker w with a 500 ms lease, lease ids l1, l2, ..."""
    leases = (f"l{i}" for i in range(1, 1000))
    params: dict[str, Any] = {
        "tenant": TENANT, "queue_name": queue, "handler_names": handlers, "limit": limit,
        "now": NOW + 1, "lease_ms": 500, "worker_id": "w", "new_lease_id": leases.__next__,
    }  # fmt: skip
    params.update(kw)
    return ClaimParams(**params)


async def insert(storage: Storage, *rows: dict[str, Any]) -> None:
    """Insert the rows in one transaction."""
    async with storage.transaction() as tx:
        for row in rows:
            await tx.insert_task(row)  # type: ignore[arg-type]


async def status_of(storage: Storage, task_id: str) -> str | None:
    row = await storage.get_task(task_id)
    return None if row is None else row["status"]


_ids = iter(range(1, 1_000_000))
