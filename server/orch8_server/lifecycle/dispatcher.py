"""Long-poll waiters and the wake-ups that feed them (P-POLL-3, P-STATE-2).

A poll that finds nothing parks a `Waiter`; every event that makes a task claimable
(enqueue, retryable fail, reap, release, retry, a scheduled time reached) calls `wake`,
which sets the event of every waiter interested in that queue and handler. Waiters then
race to claim; losers park again. Scheduled tasks are promoted by a timer armed for the
earliest `run_at`, so nothing waits for a sweep.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from orch8_server.timefmt import now_ms

log = logging.getLogger("orch8.dispatcher")


class Waiter:
    __slots__ = ("event", "handlers", "queue")

    def __init__(self, queue: str, handlers: list[str] | None) -> None:
        self.queue = queue
        self.handlers = frozenset(handlers) if handlers else None
        self.event = asyncio.Event()

    def wants(self, handler: str | None) -> bool:
        return handler is None or self.handlers is None or handler in self.handlers


class Dispatcher:
    def __init__(self) -> None:
        self._waiters: dict[str, set[Waiter]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self._promote: Callable[[], Awaitable[int | None]] | None = None

    @property
    def waiting(self) -> int:
        return sum(len(s) for s in self._waiters.values())

    def park(self, queue: str, handlers: list[str] | None) -> Waiter:
        waiter = Waiter(queue, handlers)
        self._waiters.setdefault(queue, set()).add(waiter)
        return waiter

    def unpark(self, waiter: Waiter) -> None:
        waiters = self._waiters.get(waiter.queue)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[waiter.queue]

    def wake(self, queue: str, handler: str | None = None) -> None:
        for waiter in self._waiters.get(queue, ()):
            if waiter.wants(handler):
                waiter.event.set()

    def wake_all(self) -> None:
        for waiters in self._waiters.values():
            for waiter in waiters:
                waiter.event.set()

    # Scheduled tasks (P-STATE-2) -------------------------------------------------------

    def set_promoter(self, promote: Callable[[], Awaitable[int | None]]) -> None:
        """`promote` moves due scheduled tasks to pending, wakes waiters, and returns the
        next scheduled run_at (or None)."""
        self._promote = promote

    def schedule(self, run_at: int) -> None:
        """Make sure the timer fires no later than `run_at`."""
        if self._timer_at is not None and self._timer_at <= run_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        delay = max(0.0, (run_at - now_ms()) / 1000.0)
        self._timer_at = run_at
        self._timer = loop.call_later(delay, lambda: asyncio.ensure_future(self._fire()))

    async def _fire(self) -> None:
        self._timer = None
        self._timer_at = None
        if self._promote is None:
            return
        try:
            next_at = await self._promote()
        except Exception:  # storage outage: try again soon (the reaper also promotes)
            log.warning("scheduled-task promotion failed; retrying", exc_info=True)
            next_at = now_ms() + 1000
        if next_at is not None:
            self.schedule(next_at)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.wake_all()
