"""The engine: shared state of one server instance and the wiring of the rule modules."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from orch8_server.config import Settings
from orch8_server.lifecycle.backpressure import Backpressure
from orch8_server.lifecycle.connect import Connector, DatabaseGaveUp
from orch8_server.lifecycle.dispatcher import Dispatcher
from orch8_server.lifecycle.history import History
from orch8_server.lifecycle.observe import TaskObserver
from orch8_server.lifecycle.pollers import PollerRegistry
from orch8_server.metrics import Metrics
from orch8_server.storage.base import Storage, wake_key
from orch8_server.timefmt import now_ms

if TYPE_CHECKING:
    from orch8_server.tracing import ServerSpans

log = logging.getLogger("orch8.engine")


class Engine:
    def __init__(
        self, settings: Settings, storage: Storage, spans: ServerSpans | None = None
    ) -> None:
        from orch8_server.lifecycle.leases import Leases
        from orch8_server.lifecycle.reaper import Reaper
        from orch8_server.lifecycle.reclaim import Reclaims
        from orch8_server.lifecycle.tasks import Tasks
        from orch8_server.lifecycle.workers import Workers
        from orch8_server.lifecycle.workflows import Workflows

        self.settings = settings
        self.storage = storage
        self.dispatcher = Dispatcher()
        self.pollers = PollerRegistry(settings.poller_window_ms)
        self.metrics = Metrics()
        self.backpressure = Backpressure(settings, storage, self.metrics)  # P-BP-1..3
        self.spans = spans  # P-TEL-2: None without an OTLP endpoint (nothing recorded)
        self.observe = TaskObserver(self.metrics, spans)  # P-TEL-6 histograms, P-TEL-2 spans
        self.rng = random.Random()
        self.draining = False
        self._sharing: asyncio.Task[None] | None = None
        self.history = History(storage)  # P-OBS-5
        # P-OBS-6: False until the storage is open (connected, migrated); meanwhile every
        # route but /health/live answers 503. `on_give_up` is how the process learns that
        # start-up stopped trying (it exits non-zero; the reason is in `gave_up`).
        self.connected = False
        self.gave_up: str | None = None
        self.on_give_up: Callable[[], None] | None = None
        self.connector = Connector(self._open, storage.close, settings, self.rng)
        self._connecting: asyncio.Task[None] | None = None
        self._next_scheduled: int | None = None
        self.tasks = Tasks(self)
        self.leases = Leases(self)
        # Reclaiming leases is shared by the reaper and the worker rules (P-LEASE-6,
        # P-WORKER-5); neither calls the other.
        self.reclaims = Reclaims(self.metrics, self.history, self.dispatcher, self.leases.controls)
        self.workers = Workers(self)
        self.reaper = Reaper(self)
        self.workflows = Workflows(self)  # P-WF-5

    async def start(self) -> None:
        """Open the storage: the first try here, so a reachable database is ready before
        the server listens; if it fails, keep trying in the background (P-OBS-6)."""
        # Wake-ups from other replicas sharing the database (P-POLL-3).
        self.storage.set_waker(self.dispatcher.wake, self.dispatcher.wake_all)
        if await self.connector.try_once():
            self._connected()
        else:
            self._connecting = asyncio.get_running_loop().create_task(self._keep_connecting())

    async def _open(self) -> None:
        await self.storage.open()
        self._next_scheduled = await self.storage.next_scheduled_at()

    async def _keep_connecting(self) -> None:
        try:
            await self.connector.keep_trying()
        except DatabaseGaveUp as exc:
            self.gave_up = str(exc)
            log.error(self.gave_up, extra={"cause": "database_unreachable"})
            if self.on_give_up is not None:
                self.on_give_up()
            return
        self._connected()

    def _connected(self) -> None:
        self.dispatcher.set_promoter(self.tasks.promote_due)
        if self._next_scheduled is not None:
            self.dispatcher.schedule(self._next_scheduled)
        self.reaper.start()
        self.workflows.start_pump()
        self.history.start()
        if self.storage.multi_replica:
            self._sharing = asyncio.get_running_loop().create_task(self._share_pollers())
        self.connected = True
        log.info(
            "engine started",
            extra={"storage": self.storage.kind, "failed_tries": self.connector.failures},
        )

    @property
    def retry_after_s(self) -> int:
        """Seconds a client should wait while the database is not connected yet."""
        return max(1, -(-self.connector.next_delay_ms // 1000))

    def begin_drain(self) -> None:
        """Shutdown started: waiting polls return now, new polls get 503 (P-OBS-2);
        complete, fail and heartbeat are still served so in-flight results land."""
        self.draining = True
        self.dispatcher.wake_all()

    async def stop(self) -> None:
        """Stop claiming, release waiting polls, stop the reaper, close storage."""
        self.draining = True
        self.dispatcher.close()
        for task in (self._connecting, self._sharing):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.connected:
            await self.reaper.stop()
            await self.workflows.stop_pump()
            await self.history.stop()  # the last counts land (P-OBS-5)
        await self.storage.close()
        if self.spans is not None:  # export what is buffered (a blocking HTTP call)
            await asyncio.to_thread(self.spans.shutdown)
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
        self,
        tenant: str,
        queue: str,
        handler: str,
        run_at: int,
        now: int,
        count: int | None = None,
    ) -> None:
        """Wake the tenant's waiting polls now (enough for `count` tasks, or all), or arm
        the timer for a future run_at (P-POLL-3, P-TEN-3)."""
        if run_at <= now:
            self.dispatcher.wake(wake_key(tenant, queue), handler, count)
        else:
            self.dispatcher.schedule(run_at)
