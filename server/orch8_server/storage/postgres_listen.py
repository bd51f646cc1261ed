"""LISTEN for cross-replica wake-ups, with a poll fallback while the listener is silent.

One dedicated connection (outside the pool) LISTENs on `orch8_wake`; the tasks trigger
NOTIFYs there when a row becomes pending (see postgres_schema.py). The connection is
checked every `check_ms`; when it drops (database restart, network, terminated backend)
every waiter is woken at least each `fallback_ms` so long-polls keep claiming by polling,
and it is re-established with capped backoff. On (re)connect every waiter is woken once
more, for the notifications sent while nobody listened.

P-OBS-6: a connected listener that hears nothing (not even this replica's own NOTIFYs)
for `fallback_ms` also wakes every waiter, so a lost or never-sent notification (a
trigger disabled, a proxy that drops NOTIFY) delays a task by at most `fallback_ms`.
Under traffic the channel is never silent, so this costs nothing there; an idle replica
re-checks its parked polls once per `fallback_ms` (--notify-fallback-ms).
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
_RECONNECT_S = 0.5  # first wait before re-establishing a lost LISTEN connection
_RECONNECT_MAX_S = 5.0


class WakeListener:
    def __init__(
        self,
        connect: Callable[[], Any],
        replica: str,
        on_wake: Callable[[str, str], None],
        on_gap: Callable[[], None],
        check_ms: int = 1000,
        fallback_ms: int = 5000,
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
        self._heard = 0.0  # loop time of the last notification (any replica's)

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
        self._heard = asyncio.get_running_loop().time()  # the channel is alive
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
        loop = asyncio.get_running_loop()
        backoff = _RECONNECT_S
        while True:
            try:
                conn = await asyncio.wait_for(self._connect(), timeout=5)
                self._conn = conn
                self._lost.clear()
                conn.add_termination_listener(lambda _c: self._lost.set())
                await conn.add_listener(CHANNEL, self._notified)
                self.connected = True
                backoff = _RECONNECT_S
                log.info(
                    "listening for wake-ups",
                    extra={"notify_fallback_ms": round(self.fallback_s * 1000)},
                )
                self.on_gap()
                self._heard = loop.time()
                next_check = self._heard + self.check_s
                while not conn.is_closed():
                    until = min(self._heard + self.fallback_s, next_check)
                    with contextlib.suppress(asyncio.TimeoutError):  # 3.10: not TimeoutError
                        await asyncio.wait_for(
                            self._lost.wait(), timeout=max(0.0, until - loop.time())
                        )
                    if self._lost.is_set():
                        break
                    now = loop.time()
                    if now - self._heard >= self.fallback_s:  # P-OBS-6: silent, re-check
                        self._heard = now
                        self.on_gap()
                    if now >= next_check:
                        next_check = now + self.check_s
                        await conn.fetchval("SELECT 1", timeout=self.check_s * 2)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.connected:
                    log.warning("wake-up listener lost; polling until it is back: %s", exc)
            await self._drop()
            # Poll fallback: no notifications arrive now, so wake everybody at least every
            # fallback_ms until the next reconnection try.
            deadline = loop.time() + backoff
            while True:
                self.on_gap()
                left = deadline - loop.time()
                if left <= 0:
                    break
                await asyncio.sleep(min(self.fallback_s, left))
            backoff = min(backoff * 2, _RECONNECT_MAX_S)
