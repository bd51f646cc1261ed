"""LISTEN for cross-replica wake-ups, with a poll fallback while the listener is down.

One dedicated connection (outside the pool) LISTENs on `orch8_wake`; the tasks trigger
NOTIFYs there when a row becomes pending (see postgres_schema.py). The connection is
checked every `check_ms`; when it drops (database restart, network, terminated backend)
every waiter is woken each `fallback_ms` so long-polls keep claiming by polling, and it is
re-established with capped backoff. On (re)connect every waiter is woken once more, for
the notifications sent while nobody listened.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import asyncpg
import orjson

log = logging.getLogger("orch8.storage.listen")
CHANNEL = "orch8_wake"


class WakeListener:
    def __init__(
        self,
        connect: Callable[[], Any],
        replica: str,
        on_wake: Callable[[str, str], None],
        on_gap: Callable[[], None],
        check_ms: int = 1000,
        fallback_ms: int = 500,
    ) -> None:
        self._connect = connect
        self.replica = replica
        self.on_wake = on_wake
        self.on_gap = on_gap
        self.check_s = check_ms / 1000
        self.fallback_s = fallback_ms / 1000
        self.connected = False
        self._conn: asyncpg.Connection | None = None
        self._task: asyncio.Task[None] | None = None
        self._lost = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="orch8-listen")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._drop()

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        try:
            replica, queue, handler = orjson.loads(payload)
        except (orjson.JSONDecodeError, ValueError):
            return
        if replica != self.replica:  # our own writes already woke our waiters
            self.on_wake(queue, handler)

    async def _drop(self) -> None:
        conn, self._conn, self.connected = self._conn, None, False
        if conn is not None:
            conn.terminate()

    async def _run(self) -> None:
        backoff = self.fallback_s
        while True:
            try:
                conn = await asyncio.wait_for(self._connect(), timeout=5)
                self._conn = conn
                self._lost.clear()
                conn.add_termination_listener(lambda _c: self._lost.set())
                await conn.add_listener(CHANNEL, self._notified)
                self.connected = True
                backoff = self.fallback_s
                log.info("listening for wake-ups")
                self.on_gap()
                while not conn.is_closed():
                    with contextlib.suppress(asyncio.TimeoutError):  # 3.10: not TimeoutError
                        await asyncio.wait_for(self._lost.wait(), timeout=self.check_s)
                    if self._lost.is_set():
                        break
                    await conn.fetchval("SELECT 1", timeout=self.check_s * 2)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.connected:
                    log.warning("wake-up listener lost; polling until it is back: %s", exc)
            await self._drop()
            # Poll fallback: no notifications arrive now, so wake everybody regularly.
            deadline = asyncio.get_running_loop().time() + backoff
            while asyncio.get_running_loop().time() < deadline:
                self.on_gap()
                await asyncio.sleep(self.fallback_s)
            backoff = min(backoff * 2, 5.0)
