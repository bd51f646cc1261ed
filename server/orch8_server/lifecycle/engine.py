"""The engine: shared state of one server instance and the wiring of the rule modules."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random

from orch8_server.config import Settings
from orch8_server.lifecycle.dispatcher import Dispatcher
from orch8_server.lifecycle.pollers import PollerRegistry
from orch8_server.metrics import Metrics
from orch8_server.storage.base import Storage
from orch8_server.timefmt import now_ms

log = logging.getLogger("orch8.engine")


class Engine:
    def __init__(self, settings: Settings, storage: Storage) -> None:
        from orch8_server.lifecycle.leases import Leases
        from orch8_server.lifecycle.reaper import Reaper
        from orch8_server.lifecycle.tasks import Tasks
        from orch8_server.lifecycle.workers import Workers

        self.settings = settings
        self.storage = storage
        self.dispatcher = Dispatcher()
        self.pollers = PollerRegistry(settings.poller_window_ms)
        self.metrics = Metrics()
        self.rng = random.Random()
        self.draining = False
        self._sharing: asyncio.Task[None] | None = None
        self.tasks = Tasks(self)
        self.leases = Leases(self)
        self.workers = Workers(self)
        self.reaper = Reaper(self)

    async def start(self) -> None:
        # Wake-ups from other replicas sharing the database (P-POLL-3).
        self.storage.set_waker(self.dispatcher.wake, self.dispatcher.wake_all)
        await self.storage.open()
        self.dispatcher.set_promoter(self.tasks.promote_due)
        next_at = await self.storage.next_scheduled_at()
        if next_at is not None:
            self.dispatcher.schedule(next_at)
        self.reaper.start()
        if self.storage.multi_replica:
            self._sharing = asyncio.get_running_loop().create_task(self._share_pollers())
        log.info("engine started", extra={"storage": self.storage.kind})

    def begin_drain(self) -> None:
        """Shutdown started: waiting polls return now, new polls get 503 (P-OBS-2);
        complete, fail and heartbeat are still served so in-flight results land."""
        self.draining = True
        self.dispatcher.wake_all()

    async def stop(self) -> None:
        """Stop claiming, release waiting polls, stop the reaper, close storage."""
        self.draining = True
        self.dispatcher.close()
        if self._sharing is not None:
            self._sharing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sharing
        await self.reaper.stop()
        await self.storage.close()
        log.info("engine stopped")

    async def _share_pollers(self) -> None:
        """P-OBS-1 across replicas: once a second, publish the pollers seen here (one row
        per poller at most) and merge those the other replicas saw."""
        while True:
            await asyncio.sleep(1)
            mine = self.pollers.take_local()
            try:
                others = await self.storage.share_pollers(
                    mine, now_ms() - self.settings.poller_window_ms
                )
            except Exception as exc:  # storage outage: keep them for the next round
                self.pollers.put_back(mine)
                log.warning("could not share pollers: %s", exc)
                continue
            self.pollers.merge(others)

    def made_claimable(
        self, queue: str, handler: str, run_at: int, now: int, count: int | None = None
    ) -> None:
        """Wake waiting polls now (enough for `count` tasks, or all), or arm the timer for
        a future run_at (P-POLL-3)."""
        if run_at <= now:
            self.dispatcher.wake(queue, handler, count)
        else:
            self.dispatcher.schedule(run_at)
