"""Long-poll waiters and the wake-ups that feed them (P-POLL-3, P-STATE-2).

A poll that finds nothing parks a `Waiter`; every event that makes a task claimable
(enqueue, retryable fail, reap, release, retry, a scheduled time reached) calls `wake`.
When the caller knows how many tasks it made claimable (an enqueue), `wake` sets the
events of the longest-parked interested waiters until their batch sizes cover that
count: a single enqueue wakes one poll, not every parked one (a herd of empty claims,
each a database statement, was most of the server's work in single-task mode). Without a
count (promotion, reaping, another replica's NOTIFY) every interested waiter wakes and
they race; losers park again. A woken waiter that leaves without claiming passes its
wake-up on (Leases.poll), so none is lost. Scheduled tasks are promoted by a timer armed
for the earliest `run_at`, so nothing waits for a sweep.

Queues are named by `wake_key(tenant, queue)` here (P-TEN-3): a tenant's enqueue wakes
only that tenant's polls of the queue, even where another tenant uses the same name.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from orch8_server.storage.base import ANY_QUEUE, CONTROLS_CHANGED, split_wake_key
from orch8_server.timefmt import now_ms

log = logging.getLogger("orch8.dispatcher")


class Waiter:
    __slots__ = ("event", "handlers", "queues", "want")

    def __init__(self, queues: str | list[str], handlers: list[str] | None, want: int = 1) -> None:
        # P-QUEUE-2/3: a multi-queue poll parks on every one of its queues.
        self.queues = (queues,) if isinstance(queues, str) else tuple(queues)
        self.handlers = frozenset(handlers) if handlers else None
        self.want = want  # the poll's batch size
        self.event = asyncio.Event()

    @property
    def queue(self) -> str:
        return self.queues[0]

    def wants(self, handler: str | None) -> bool:
        return handler is None or self.handlers is None or handler in self.handlers

    def shares(self, other: Waiter) -> bool:
        """Whether a task `other` may claim could be claimed by this poll too."""
        return (
            self.handlers is None
            or other.handlers is None
            or not self.handlers.isdisjoint(other.handlers)
        )


class Dispatcher:
    def __init__(self) -> None:
        # Per queue, waiters in parking order (a dict as an ordered set).
        self._waiters: dict[str, dict[Waiter, None]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self._promote: Callable[[], Awaitable[int | None]] | None = None
        self._firing: asyncio.Task[None] | None = None
        # Queue controls (lifecycle/controls.py): a paused queue wakes nobody (P-CTRL-1);
        # a control changed elsewhere (or wake-ups were missed) makes the view stale.
        self.is_paused: Callable[[str], bool] = lambda _queue: False
        self.on_controls_changed: Callable[[], None] = lambda: None

    def park(self, queues: str | list[str], handlers: list[str] | None, want: int = 1) -> Waiter:
        waiter = Waiter(queues, handlers, want)
        for queue in waiter.queues:
            self._waiters.setdefault(queue, {})[waiter] = None
        return waiter

    def unpark(self, waiter: Waiter) -> None:
        for queue in waiter.queues:
            waiters = self._waiters.get(queue)
            if waiters is not None:
                waiters.pop(waiter, None)
                if not waiters:
                    del self._waiters[queue]

    def wake(self, queue: str, handler: str | None = None, count: int | None = None) -> None:
        """Wake waiters for `handler` in `queue`: all of them, or (with `count`, the tasks
        made claimable) the longest-parked ones not yet woken whose batch sizes cover it.

        `queue` of ANY_QUEUE means every queue of the tenant (a handler's running cap freed
        a slot); handler
        CONTROLS_CHANGED (another replica changed a control) wakes every poll of `queue`
        once the controls are re-read. Work of a paused queue wakes nobody (P-CTRL-1)."""
        if handler == CONTROLS_CHANGED:
            self.on_controls_changed()
            handler = None
        elif self.is_paused(queue):
            return
        tenant, sep, name = queue.partition("/")
        if queue == ANY_QUEUE or (sep and name == ANY_QUEUE):
            for key in list(self._waiters):
                mine = queue == ANY_QUEUE or split_wake_key(key)[0] == tenant
                if mine and not self.is_paused(key):
                    self._wake_queue(key, handler, None)
            return
        self._wake_queue(queue, handler, count)

    def _wake_queue(self, queue: str, handler: str | None, count: int | None) -> None:
        left = count
        for waiter in self._waiters.get(queue, ()):
            if left is not None and left <= 0:
                return
            if waiter.wants(handler) and not waiter.event.is_set():
                waiter.event.set()
                if left is not None:
                    left -= waiter.want

    def pass_on(self, leaving: Waiter) -> None:
        """A poll leaves woken by tasks it may not have claimed: wake, on each of its
        queues, the longest-parked polls not yet woken that could claim such tasks (a
        handler in common), until their batch sizes cover its own. Polls of other handlers
        stay parked: waking them would cost an empty claim each."""
        for queue in leaving.queues:
            if self.is_paused(queue):
                continue
            left = leaving.want
            for waiter in self._waiters.get(queue, ()):
                if left <= 0:
                    break
                if waiter is not leaving and not waiter.event.is_set() and waiter.shares(leaving):
                    waiter.event.set()
                    left -= waiter.want

    def wake_all(self) -> None:
        self.on_controls_changed()  # wake-ups may have been missed: controls too
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
        self._timer = loop.call_later(delay, self._start_fire)

    def _start_fire(self) -> None:
        # Owned: close() awaits a promotion in progress.
        self._firing = asyncio.get_running_loop().create_task(self._fire(), name="orch8-promote")

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

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.wake_all()
        if self._firing is not None:
            await self._firing
            self._firing = None
