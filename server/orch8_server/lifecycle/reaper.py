"""The reaper: expired leases, overdue tasks, dead workers, due scheduled tasks (P-LEASE-6)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from orch8_server import timefmt
from orch8_server.lifecycle.attempts import LEASE_EXPIRED_CODE
from orch8_server.lifecycle.reclaim import reclaim
from orch8_server.storage.base import StorageUnavailable, wake_key

if TYPE_CHECKING:
    from orch8_server.lifecycle.engine import Engine

log = logging.getLogger("orch8.reaper")
BATCH = 500


class Reaper:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    def start(self) -> None:
        self._stop.clear()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="orch8-reaper")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _run(self) -> None:
        interval = self.engine.settings.reaper_interval_ms / 1000
        while not self._stop.is_set():
            try:
                await self.tick()
            except StorageUnavailable as exc:  # database outage: the next tick catches up
                log.warning("reaper tick skipped: %s", exc)
            except Exception:  # keep reaping: one bad tick must not stop reclamation
                log.exception("reaper tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=interval)

    async def tick(self) -> None:
        engine = self.engine
        now = timefmt.now_ms()
        while True:
            async with engine.storage.transaction() as tx:
                expired = await tx.expired_leases(now, BATCH)
                reclaimed = await reclaim(
                    tx, expired, LEASE_EXPIRED_CODE, "lease expired before the task finished", now
                )
                advanced = await engine.workflows.advance(tx, reclaimed, now)  # P-WF-5
            engine.workflows.announce(advanced)
            await engine.reclaims.announce(reclaimed)  # after commit; P-CTRL-2
            if len(expired) < BATCH:
                break
        async with engine.storage.transaction() as tx:
            overdue = await tx.expire_overdue(now)  # P-EXPIRE-1
            due = await tx.promote_due(now)  # fallback for the scheduled-task timer
        if overdue:
            engine.metrics.expired.inc(overdue)
        for tenant, queue, handler in due:
            engine.dispatcher.wake(wake_key(tenant, queue), handler)
        await engine.workers.sweep_dead(now)
        engine.pollers.prune(now)
