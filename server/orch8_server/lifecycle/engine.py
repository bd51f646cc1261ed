"""The engine: one server instance's parts (built by compose.build), its start-up and
its shutdown. The http layer reaches the rules through it; no rule receives it."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orch8_server.config import Settings
from orch8_server.lifecycle.backpressure import Backpressure
from orch8_server.lifecycle.clock import TestClock
from orch8_server.lifecycle.connect import Connector, DatabaseGaveUp
from orch8_server.lifecycle.controls import Controls
from orch8_server.lifecycle.dispatcher import Dispatcher
from orch8_server.lifecycle.effects import Changes, Work
from orch8_server.lifecycle.history import History
from orch8_server.lifecycle.leases import Leases
from orch8_server.lifecycle.pollers import PollerRegistry
from orch8_server.lifecycle.rate_limits import RateLimits
from orch8_server.lifecycle.state import RunState
from orch8_server.lifecycle.tasks import Tasks
from orch8_server.lifecycle.workers import Workers
from orch8_server.lifecycle.workflows import Workflows
from orch8_server.metrics import Metrics
from orch8_server.services import Service
from orch8_server.storage.base import Storage
from orch8_server.timefmt import now_ms

if TYPE_CHECKING:
    from orch8_server.tracing import ServerSpans

log = logging.getLogger("orch8.engine")


@dataclass(eq=False)
class Engine:
    settings: Settings
    storage: Storage
    spans: ServerSpans | None  # P-TEL-2: None without an OTLP endpoint (nothing recorded)
    state: RunState
    rng: random.Random
    metrics: Metrics
    dispatcher: Dispatcher
    pollers: PollerRegistry
    history: History
    backpressure: Backpressure
    controls: Controls
    tasks: Tasks
    leases: Leases
    workers: Workers
    workflows: Workflows
    services: list[Service]
    work: Work
    clock: TestClock  # P-CLOCK-1..5: GET /clock, POST /clock/advance
    rate_limits: RateLimits  # P-RATE-1..5
    # `on_give_up` is how the process learns that start-up stopped trying to reach the
    # database (it exits non-zero; the reason is in `gave_up`), P-OBS-6.
    gave_up: str | None = None
    on_give_up: Callable[[], None] | None = None
    _connecting: asyncio.Task[None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.connector = Connector(self._open, self.storage.close, self.settings, self.rng)

    @property
    def draining(self) -> bool:
        return self.state.draining

    @property
    def connected(self) -> bool:
        return self.state.connected

    async def start(self) -> None:
        """Open the storage: the first try here, so a reachable database is ready before
        the server listens; if it fails, keep trying in the background (P-OBS-6)."""
        try:
            opened = await self.connector.try_once()
        except DatabaseGaveUp as exc:  # refused for good: the process exits saying why
            self.gave_up = str(exc)
            raise
        if opened:
            self._connected()
        else:
            self._connecting = asyncio.get_running_loop().create_task(self._keep_connecting())

    async def _open(self) -> None:
        await self.storage.open()
        # Scheduled tasks stored before this start: arm the timer for the first.
        await self.work.applied(Changes(now_ms(), timer=await self.storage.next_scheduled_at()))

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
        for service in self.services:
            service.start()
        self.state.connected = True
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
        self.state.draining = True
        self.dispatcher.wake_all()

    async def stop(self) -> None:
        """Stop claiming, release waiting polls, stop the services, close storage."""
        self.state.draining = True
        await self.dispatcher.close()
        if self._connecting is not None:
            self._connecting.cancel()
            await asyncio.gather(self._connecting, return_exceptions=True)
        for service in self.services:  # the history service flushes last counts (P-OBS-5)
            await service.stop()
        await self.storage.close()
        if self.spans is not None:  # export what is buffered (a blocking HTTP call)
            await asyncio.to_thread(self.spans.shutdown)
        log.info("engine stopped")
