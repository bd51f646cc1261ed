"""Fairness across tenants (P-TEN-5), on both backends: a tenant's flood of 100,000 tasks on
a queue and handler another tenant shares does not delay that tenant's single task: its
poll claims it at once, and the flood's own polls never see it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx

from orch8_server.lifecycle.tasks import new_task_row
from orch8_server.storage import open_storage
from orch8_server.testing import RunningServer
from orch8_server.timefmt import now_ms

FLOOD = 100_000


def _flood(db: str, handler: str) -> None:
    """The flood written into the server's database in one transaction: 100,000 enqueues
    over HTTP cost minutes here, and the enqueue path is not what this test is about."""

    async def run() -> None:
        storage = open_storage(db, pool_size=1)
        await storage.open()
        try:
            now = now_ms()
            async with storage.transaction() as tx:
                for i in range(FLOOD):
                    await tx.insert_task(
                        new_task_row({"handler_name": handler, "params": {"n": i}}, now,
                                     tenant="flood")  # type: ignore[arg-type]
                    )  # fmt: skip
        finally:
            await storage.close()

    asyncio.run(run())


def test_a_flood_of_one_tenant_does_not_delay_another_tenants_task_P_TEN_5(
    start_server: Callable[..., RunningServer], name: str
) -> None:
    server = start_server()
    flood, quiet = {"X-Tenant-Id": "flood"}, {"X-Tenant-Id": "quiet"}
    _flood(server.db, name)
    with httpx.Client(base_url=server.url, timeout=60) as api:
        mine = api.post("/tasks", json={"handler_name": name}, headers=quiet).json()
        # The flood's workers are busy with it; its polls never reach the other tenant's task.
        r = api.post("/workers/tasks/poll/batch", headers=flood,
                     json={"handler_names": [name], "batch_size": 100, "wait_ms": 0})  # fmt: skip
        assert len(r.json()["tasks"]) == 100 and mine["id"] not in {
            t["id"] for t in r.json()["tasks"]
        }
        # The other tenant's first poll takes its task: zero claims of the flood before it.
        r = api.post("/workers/tasks/poll", headers=quiet,
                     json={"handler_names": [name], "wait_ms": 0})  # fmt: skip
        assert r.status_code == 200 and r.json()["id"] == mine["id"], r.text
        depth = api.get("/queues", headers=flood).json()["queues"]
        assert sum(q["pending"] for q in depth if q["handler_name"] == name) == FLOOD - 100
