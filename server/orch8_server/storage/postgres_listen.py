"""LISTEN for cross-replica wake-ups, with a poll fallback while the listener is silent.

One dedicated connection (outside the pool) LISTENs on `orch8_wake`; the tasks trigger
NOTIFYs there when a row becomes pending (see postgres_schema.py). It runs as a
background service (services.py) ticking every `check_ms` (or every `fallback_ms`, if
shorter), and at once when the connection reports its end: a tick checks the connection
(`SELECT 1`), re-establishes a lost one with capped backoff, and on (re)connect wakes every
waiter once, for the notifications sent while nobody listened.

P-OBS-6: when nothing was heard for `fallback_ms` (a connected listener that hears not even
this replica's own NOTIFYs, or no listener at all) every waiter is woken, so a lost or
never-sent notification (a trigger disabled, a proxy that drops NOTIFY, a database
restart) delays a task by at most `fallback_ms`. Under traffic the channel is never
silent, so this costs nothing there; an idle replica re-checks its parked polls once per
`fallback_ms` (--notify-fallback-ms).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import asyncpg
import orjson

from orch8_server.services import Service

log = logging.getLogger("orch8.storage.listen")
CHANNEL = "orch8_wake"
_RECONNECT_S = 0.5  # first wait before re-establishing a lost LISTEN connection
_RECONNECT_MAX_S = 5.0
_CONNECT_TIMEOUT_S = 5.0


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
        tick_s = min(self.check_s, self.fallback_s)
        # A silence is noticed at the first tick after it began, so it is acted on one
        # tick early: a parked poll waits at most fallback_ms, never fallback_ms + a tick.
        self._silence_s = self.fallback_s - tick_s
        self._service = Service("pg-listen", tick_s, self._tick, final=self._drop)
        self._heard = 0.0  # loop time of the last notification (any replica's) or wake
        self._checked = 0.0  # loop time of the last SELECT 1
        self._retry_at = 0.0  # loop time of the next connection attempt
        self._backoff = _RECONNECT_S

    def start(self) -> None:
        self._heard = asyncio.get_running_loop().time()
        self._service.start()

    async def stop(self) -> None:
        await self._service.stop()

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

    def _gap(self, now: float) -> None:
        self._heard = now
        self.on_gap()

    async def _tick(self) -> None:
        now = asyncio.get_running_loop().time()
        conn = self._conn
        if conn is not None and not conn.is_closed() and now - self._checked >= self.check_s:
            self._checked = now
            try:
                await conn.fetchval("SELECT 1", timeout=self.check_s * 2)
            except Exception as exc:  # any failure means the connection is gone
                await self._lost(exc)
        elif conn is not None and conn.is_closed():
            await self._lost(ConnectionError("the LISTEN connection was closed"))
        if self._conn is None and now >= self._retry_at:
            await self._reconnect(now)
        now = asyncio.get_running_loop().time()
        if now - self._heard >= self._silence_s:  # P-OBS-6: silent or not listening
            self._gap(now)

    async def _lost(self, cause: BaseException) -> None:
        if self.connected:
            log.warning(
                "wake-up listener lost; polling every %d ms until it is back: %s",
                round(self.fallback_s * 1000), cause or type(cause).__name__,
                extra={"cause": type(cause).__name__},
            )  # fmt: skip
        await self._drop()
        self._retry_at = asyncio.get_running_loop().time() + self._backoff
        self._backoff = min(self._backoff * 2, _RECONNECT_MAX_S)

    async def _reconnect(self, now: float) -> None:
        try:
            conn = await asyncio.wait_for(self._connect(), timeout=_CONNECT_TIMEOUT_S)
        except Exception as exc:  # the database is away: retry with backoff
            log.debug("wake-up listener cannot connect: %s", exc or type(exc).__name__)
            self._retry_at = now + self._backoff
            self._backoff = min(self._backoff * 2, _RECONNECT_MAX_S)
            return
        self._conn = conn
        try:
            conn.add_termination_listener(lambda _c: self._service.poke())
            await conn.add_listener(CHANNEL, self._notified)
        except Exception as exc:  # lost while setting up: next try
            await self._lost(exc)
            return
        self.connected = True
        self._backoff = _RECONNECT_S
        self._checked = asyncio.get_running_loop().time()
        log.info(
            "listening for wake-ups", extra={"notify_fallback_ms": round(self.fallback_s * 1000)}
        )
        self._gap(self._checked)  # the notifications sent while nobody listened
