"""Background services: one small base for every loop the server runs beside requests.

A service has a name, an interval and a tick. `start` runs the tick at once and then every
interval (or sooner when `poke`d; at once again when a tick says more work is waiting),
until `stop`, which waits for a running tick to end and then runs the service's `final`
step (e.g. the last history flush). A tick that fails is logged with its cause and the
next one runs on time: a database outage (StorageUnavailable) is a warning, anything
else an error with its traceback. Every asyncio task the server starts in the background
belongs to a service or to an owner that awaits it at shutdown (tests/test_effects.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from orch8_server.storage.base import StorageUnavailable

log = logging.getLogger("orch8.services")

# A tick returns True when more work is already waiting (a full batch): run again now.
Tick = Callable[[], Awaitable[Any]]


class Service:
    def __init__(
        self,
        name: str,
        interval_s: float,
        tick: Tick,
        final: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.name = name
        self.interval_s = interval_s
        self._tick = tick
        self._final = final
        self._poked = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self.ticks = 0  # ticks run, failed or not

    def start(self) -> None:
        self._stopping = False
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"orch8-{self.name}")

    def poke(self) -> None:
        """Run the next tick now rather than at the end of the interval."""
        self._poked.set()

    async def run_once(self) -> None:
        """Run the tick now, here, until it says nothing more is waiting (P-CLOCK-2: the
        test clock's advance fires what fell due before it answers). Errors propagate."""
        while await self._tick():
            pass

    async def stop(self) -> None:
        if self._task is None:
            return
        self._stopping = True
        self._poked.set()
        await self._task
        self._task = None
        if self._final is not None:
            await self._final()

    async def _run(self) -> None:
        while not self._stopping:
            self._poked.clear()
            more = False
            try:
                more = bool(await self._tick())
            except StorageUnavailable as exc:  # a database outage: the next tick catches up
                log.warning("%s skipped: %s", self.name, exc, extra={"service": self.name})
            except Exception as exc:  # keep going: one bad tick must not stop the service
                log.exception(
                    "%s failed: %s", self.name, exc,
                    extra={"service": self.name, "cause": type(exc).__name__},
                )  # fmt: skip
            self.ticks += 1
            if more or self._stopping:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poked.wait(), timeout=self.interval_s)
