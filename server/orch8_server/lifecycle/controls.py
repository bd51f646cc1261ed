"""Queue controls and label routing: this replica's view of them (P-CTRL-1..3, P-LABEL-1).

The controls live in the database (queue_controls, handler_controls), so they hold on
every replica and survive a restart. Each replica keeps a copy to choose the claim path:
a queue or handler with no control takes the plain claim (whose SQL still skips paused and
capped rows, so a stale copy never passes a control); a capped one takes the serialised
claim that counts running tasks under a lock. The copy is re-read when a control changes
here, when another replica announces a change (a NOTIFY with handler CONTROLS_CHANGED),
and when wake-ups may have been missed.

Workers' labels (P-LABEL-1) are looked up by worker_id and kept `LABELS_TTL_MS`; a
registration, deregistration or death on this replica forgets them at once.

Everything is per tenant (P-TEN-3): queues are keyed by `wake_key(tenant, queue)` (the
dispatcher's key), handler caps and workers' labels by (tenant, name).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from orch8_server import timefmt
from orch8_server.lifecycle.dispatcher import Dispatcher
from orch8_server.storage.base import ANY_QUEUE, Row, Storage, wake_key

if TYPE_CHECKING:
    from orch8_server._generated.models import HandlerControl, QueueControl

log = logging.getLogger("orch8.controls")
LABELS_TTL_MS = 1000


class Controls:
    def __init__(self, storage: Storage, dispatcher: Dispatcher) -> None:
        self.storage = storage
        self.dispatcher = dispatcher
        # wake_key(tenant, queue) -> its control row, paused or capped only
        self._queues: dict[str, Row] = {}
        self._handler_caps: dict[tuple[str, str], int] = {}  # (tenant, handler) -> max_running
        self._stale = True  # read on first use: the stored controls survive restarts
        self.any_cap = False  # a running cap exists: finished tasks may wake polls
        self._reading = asyncio.Lock()
        self._workers: dict[tuple[str, str], tuple[int, Row | None]] = {}

    # This replica's view -----------------------------------------------------------------

    def mark_stale(self) -> None:
        self._stale = True

    async def current(self) -> None:
        """Re-read the controls if they may have changed (one read for concurrent polls)."""
        if not self._stale:
            return
        async with self._reading:
            if self._stale:
                self._stale = False  # a change announced during the read marks it again
                try:
                    queues, handlers = await self.storage.controls()
                except BaseException:
                    self._stale = True
                    raise
                self._apply(queues, handlers)

    def _apply(self, queues: list[Row], handlers: list[Row]) -> None:
        self._queues = {
            wake_key(q["tenant"], q["queue_name"]): q
            for q in queues
            if q["paused"] or q["max_running"] is not None
        }
        self._handler_caps = {
            (h["tenant"], h["handler_name"]): h["max_running"]
            for h in handlers
            if h["max_running"] is not None
        }
        self.any_cap = bool(self._handler_caps) or any(
            q["max_running"] is not None for q in self._queues.values()
        )

    def paused(self, key: str) -> bool:
        """Is the queue of this wake_key(tenant, queue) paused (P-CTRL-1)?"""
        control = self._queues.get(key)
        return control is not None and bool(control["paused"])

    def capped(self, tenant: str, queue: str, handlers: list[str] | None) -> bool:
        """Does a claim of `queue` for `handlers` need the serialised path (P-CTRL-2)?"""
        control = self._queues.get(wake_key(tenant, queue))
        if control is not None and control["max_running"] is not None:
            return True
        if not self._handler_caps:
            return False
        if handlers is None:
            return any(t == tenant for t, _ in self._handler_caps)
        return any((tenant, h) in self._handler_caps for h in handlers)

    def queue_cap(self, tenant: str, queue: str) -> int | None:
        control = self._queues.get(wake_key(tenant, queue))
        return None if control is None else control["max_running"]

    def handler_cap(self, tenant: str, handler: str) -> int | None:
        return self._handler_caps.get((tenant, handler))

    async def freed(self, rows: Iterable[tuple[str, str, str]]) -> None:
        """Tasks of these (tenant, queue, handler) stopped running (completed, failed,
        cancelled): wake the polls a running cap held back, here and on every replica
        (P-CTRL-2). Costs nothing while no cap exists."""
        if not self.any_cap:
            return
        announced = set()
        for tenant, queue, handler in rows:
            if (tenant, handler) in self._handler_caps:
                queue = ANY_QUEUE  # the handler's polls on every queue of the tenant
            elif self.queue_cap(tenant, queue) is None:
                continue
            announced.add((wake_key(tenant, queue), handler))
        for queue, handler in sorted(announced):
            self.dispatcher.wake(queue, handler)
            try:
                await self.storage.announce(queue, handler)
            except Exception as exc:  # the others' polls still re-poll within wait_ms
                log.warning("could not announce a freed running slot: %s", exc)

    # Operator controls (P-CTRL-1, P-CTRL-2) ---------------------------------------------

    async def _set_queue(self, tenant: str, queue: str, fields: Row) -> QueueControl:
        now = timefmt.now_ms()
        row = await self.storage.set_queue_control(tenant, queue, fields, now)
        await self._reread()
        return await self.queue_view(row)

    async def _reread(self) -> None:
        self._stale = True
        await self.current()

    async def pause(self, tenant: str, queue: str) -> QueueControl:
        """P-CTRL-1: idempotent; the first pause's paused_at is kept."""
        await self.current()
        key = wake_key(tenant, queue)
        if self.paused(key):
            return await self.queue_view(self._queues[key])
        return await self._set_queue(tenant, queue, {"paused": True, "paused_at": timefmt.now_ms()})

    async def resume(self, tenant: str, queue: str) -> QueueControl:
        """P-CTRL-1: ends the pause and wakes the queue's waiting polls at once."""
        view = await self._set_queue(tenant, queue, {"paused": False, "paused_at": None})
        self.dispatcher.wake(wake_key(tenant, queue))
        return view

    async def set_queue_limit(
        self, tenant: str, queue: str, max_running: int | None
    ) -> QueueControl:
        view = await self._set_queue(tenant, queue, {"max_running": max_running})
        self.dispatcher.wake(wake_key(tenant, queue))  # a higher cap may free slots
        return view

    async def set_handler_limit(
        self, tenant: str, handler: str, max_running: int | None
    ) -> HandlerControl:
        now = timefmt.now_ms()
        row = await self.storage.set_handler_control(tenant, handler, max_running, now)
        await self._reread()
        self.dispatcher.wake(wake_key(tenant, ANY_QUEUE), handler)
        running = await self._running(tenant)
        return handler_view(row, sum(n for (_, h), n in running.items() if h == handler))

    async def _running(self, tenant: str) -> dict[tuple[str, str], int]:
        counts = await self.storage.running_counts()
        return {(q, h): n for t, q, h, n in counts if t == tenant}

    async def queue_view(self, row: Row) -> QueueControl:
        running = await self._running(row["tenant"])
        return queue_view(row, sum(n for (q, _), n in running.items() if q == row["queue_name"]))

    # Workers' labels (P-LABEL-1) ---------------------------------------------------------

    async def worker_of(self, tenant: str, worker_id: str) -> Row | None:
        """The tenant's worker row of that id, cached `LABELS_TTL_MS` (P-LABEL-1, P-AUTH-7;
        P-TEN-3: another tenant's worker of that id is not it)."""
        now = timefmt.now_ms()
        cached = self._workers.get((tenant, worker_id))
        if cached is not None and cached[0] > now:
            return cached[1]
        row = await self.storage.get_worker(tenant, worker_id)
        if len(self._workers) > 10_000:
            self._workers.clear()  # bounded: curl polls may send any worker_id
        self._workers[(tenant, worker_id)] = (now + LABELS_TTL_MS, row)
        return row

    async def labels_of(self, tenant: str, worker_id: str | None) -> dict[str, str] | None:
        """The labels of a registered, live worker of the tenant (None for none,
        unregistered or dead)."""
        if worker_id is None:
            return None
        row = await self.worker_of(tenant, worker_id)
        return None if row is None or row["state"] == "dead" else (row["labels"] or None)

    def forget_worker(self, tenant: str, worker_id: str) -> None:
        self._workers.pop((tenant, worker_id), None)


def queue_view(row: Row, running: int) -> QueueControl:
    return {
        "queue_name": row["queue_name"],
        "paused": bool(row["paused"]),
        "paused_at": timefmt.iso_or_none(row["paused_at"]),
        "max_running": row["max_running"],
        "running": running,
        "updated_at": timefmt.iso_or_none(row["updated_at"]),
    }


def handler_view(row: Row, running: int) -> HandlerControl:
    return {
        "handler_name": row["handler_name"],
        "max_running": row["max_running"],
        "running": running,
        "updated_at": timefmt.iso_or_none(row["updated_at"]),
    }
