"""Units of work, and the one place where what they changed reaches the rest of the server.

A rule changes tasks inside a unit of work (`async with work() as uow:`): a storage
transaction plus a record of what happened in it (`Changes`: tasks created, claimed,
ended by a `Transition`, expired, promoted; workflow instances finished). Before the
transaction commits, the hooks run in it (the workflow advance, P-WF-5, reads the ended
tasks and may dispatch, cancel and finish more: recorded in the same unit). After it
committed, `Effects.apply` turns the record into every observable consequence: counters
(P-OBS-3), queue history (P-OBS-5), histograms and spans (P-TEL-6, P-TEL-2), wake-ups of
parked polls and the scheduled-task timer (P-POLL-3), slots a running cap freed (P-CTRL-2)
and waiters on an instance (P-WF-9). Nothing here runs for work that rolled back, and no
rule writes a counter or a wake-up itself: tests/test_effects.py checks both.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from orch8_server.lifecycle.controls import Controls
from orch8_server.lifecycle.dispatcher import Dispatcher
from orch8_server.lifecycle.history import History
from orch8_server.lifecycle.observe import TaskObserver
from orch8_server.lifecycle.transitions import Kind, Transition
from orch8_server.metrics import Metrics
from orch8_server.storage.base import Row, Storage, Tx, wake_key
from orch8_server.timefmt import now_ms

log = logging.getLogger("orch8.effects")
Labels = tuple[str, str, str]  # (tenant, queue, handler), P-TEN-4


@dataclass(slots=True)
class Changes:
    """What a unit of work did, for `Effects.apply` once it committed."""

    now: int
    created: list[Row] = field(default_factory=list)  # new tasks (enqueue, workflow steps)
    claimed: list[Row] = field(default_factory=list)
    ended: list[tuple[Kind, Row, bool]] = field(default_factory=list)  # kind, row, freed
    expired: int = 0  # ended by good_until in a set-based statement (P-EXPIRE-1)
    promoted: list[Labels] = field(default_factory=list)  # scheduled -> pending
    finished_instances: list[str] = field(default_factory=list)
    timer: int | None = None  # arm the scheduled-task timer for this run_at (start-up)


@dataclass(slots=True)
class UnitOfWork(Changes):
    tx: Tx | None = None
    # (tenant, concurrency key) of every keyed task this unit moved, and (tenant, rate limit
    # key) of every paced one: admitted before commit (P-KEY-3, P-RATE-3)
    keys: set[tuple[str, str]] = field(default_factory=set)
    rate_keys: set[tuple[str, str]] = field(default_factory=set)

    @property
    def db(self) -> Tx:
        assert self.tx is not None, "a unit of work is used inside its transaction"
        return self.tx

    async def apply(self, t: Transition) -> Row:
        """Store a transition (the task's columns, the ended attempt) and record it."""
        fields, key, rate_key = t.fields, t.task["concurrency_key"], t.task["rate_limit_key"]
        if key is not None:  # P-KEY-1, P-KEY-3: its key's slots are counted again
            self.keys.add((t.task["tenant"], key))
        if rate_key is not None:  # P-RATE-3: each start takes a token
            self.rate_keys.add((t.task["tenant"], rate_key))
        if fields.get("status") == "pending" and (key is not None or rate_key is not None):
            fields = {**fields, "status": "held"}  # back in its key's queue
        await self.db.update_task(t.task["id"], fields)
        if t.attempt is not None:
            await self.db.insert_attempt(t.attempt)
        self.ended.append((t.kind, t.task, t.freed))
        return t.task

    def completed(self, rows: list[Row]) -> None:
        """Rows a set-based completion stored (storage `complete_running`)."""
        self.ended.extend(("completed", row, True) for row in rows)
        for row in rows:
            if row["concurrency_key"] is not None:  # P-KEY-3: a slot is free
                self.keys.add((row["tenant"], row["concurrency_key"]))


Hook = Callable[[UnitOfWork], Awaitable[None]]


class InstanceWaiters:
    """Calls waiting for a workflow instance to finish (P-WF-9) on this replica."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    async def wait(self, instance_id: str, timeout_s: float) -> None:
        event = self._events.setdefault(instance_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout=timeout_s)

    def finished(self, instance_id: str) -> None:
        event = self._events.pop(instance_id, None)
        if event is not None:
            event.set()


class Effects:
    """Applies committed changes to every observer. The only writer of task counters,
    queue history, task telemetry and task wake-ups."""

    def __init__(
        self,
        metrics: Metrics,
        history: History,
        observe: TaskObserver,
        dispatcher: Dispatcher,
        controls: Controls,
        waiters: InstanceWaiters,
    ) -> None:
        self.metrics = metrics
        self.history = history
        self.observe = observe
        self.dispatcher = dispatcher
        self.controls = controls
        self.waiters = waiters

    async def apply(self, changes: Changes) -> None:
        now = changes.now
        if changes.created:
            self._created(changes.created, now)
        if changes.claimed:
            self._claimed(changes.claimed, now)
        if changes.expired:
            self.metrics.expired.inc(changes.expired)
        for tenant, queue, handler in changes.promoted:
            self.dispatcher.wake(wake_key(tenant, queue), handler)
        if changes.ended:
            await self._ended(changes.ended, now)
        for instance_id in changes.finished_instances:
            self.waiters.finished(instance_id)
        if changes.timer is not None:
            self.dispatcher.schedule(changes.timer)

    def _created(self, rows: list[Row], now: int) -> None:
        """New tasks: counted once per (queue, handler), claimable ones woken for."""
        counts: Counter[Labels] = Counter()
        for row in rows:
            counts[(row["tenant"], row["queue_name"], row["handler_name"])] += 1
            if row["status"] == "expired":  # P-EXPIRE-1: past its deadline on arrival
                self.metrics.expired.inc()
        for labels, n in counts.items():
            self.metrics.enqueued.labels(*labels).inc(n)
            self.history.enqueued(labels[0], {labels[1:]: n})  # P-OBS-5
        self._claimable(rows, now, counted=True)
        if self.observe.spans is not None:  # P-TEL-2 (the None check: no cost without)
            self.observe.enqueued(rows, now)

    def _claimed(self, rows: list[Row], now: int) -> None:
        counts = Counter((r["tenant"], r["queue_name"], r["handler_name"]) for r in rows)
        for labels, n in counts.items():
            self.metrics.claimed.labels(*labels).inc(n)
        self.history.claimed(rows)  # P-OBS-5
        self.observe.claimed(rows, now)  # P-TEL-6, P-TEL-2

    async def _ended(self, ended: list[tuple[Kind, Row, bool]], now: int) -> None:
        counts: Counter[tuple[str, Labels]] = Counter()  # (counter name, labels)
        completed: list[Row | None] = []  # by a worker: run time, spans
        failed: list[Row | None] = []  # failed or requeued by a worker
        back: list[Row] = []  # claimable again
        freed: set[Labels] = set()
        reclaimed = 0
        for kind, row, was_running in ended:
            labels = (row["tenant"], row["queue_name"], row["handler_name"])
            if was_running:
                freed.add(labels)
            if kind == "completed":
                counts[("completed", labels)] += 1
                completed.append(row)
            elif kind in ("failed", "requeued"):
                counts[(kind, labels)] += 1
                self.history.failed(row["tenant"], row["queue_name"])  # P-OBS-5
                failed.append(row)
                if kind == "requeued":
                    back.append(row)
            elif kind == "reclaimed":  # P-LEASE-6, P-WORKER-5
                reclaimed += 1
                counts[("reaped", labels)] += 1
                self.history.failed(row["tenant"], row["queue_name"])
                if row["status"] == "failed":
                    counts[("failed", labels)] += 1
                else:
                    back.append(row)
            elif kind == "resolved":  # P-MANUAL-1: counted as its outcome
                counts[(row["status"], labels)] += 1
                self.history.finished(row["tenant"], row["queue_name"], row["status"])
            elif kind == "cancelled":
                counts[("cancelled", labels)] += 1
            elif kind == "expired":
                self.metrics.expired.inc()
            else:  # released, retried: back in the queue, nothing counted
                back.append(row)
        for (name, labels), n in counts.items():
            getattr(self.metrics, name).labels(*labels).inc(n)
        if completed:
            self.history.completed(completed)  # P-OBS-5
            self.observe.completed(completed, now)  # P-TEL-6, P-TEL-2
        if failed:
            self.observe.failed(failed, now)
        if reclaimed:
            code = next(r["error"]["code"] for k, r, _ in ended if k == "reclaimed")
            log.info("reclaimed tasks", extra={"count": reclaimed, "code": code})
        self._claimable(back, now, counted=False)
        if freed:
            await self.controls.freed(freed)  # P-CTRL-2, here and on every replica

    def _claimable(self, rows: list[Row], now: int, counted: bool) -> None:
        """Wake the polls of each (tenant, queue, handler) once for what is claimable now
        (enough polls for that many tasks when `counted`, or every one), and arm the
        timer for the earliest future run_at (P-POLL-3, P-STATE-2)."""
        due: dict[tuple[Labels, bool], int] = {}
        ready: Counter[tuple[Labels, bool]] = Counter()
        labelled: set[Labels] = set()
        for row in rows:
            if row["status"] not in ("pending", "scheduled"):
                continue
            labels = (row["tenant"], row["queue_name"], row["handler_name"])
            key = (labels, row["run_at"] <= now)
            due[key] = min(due.get(key, row["run_at"]), row["run_at"])
            ready[key] += 1
            if row.get("required_labels"):
                labelled.add(labels)
        for (labels, now_due), run_at in due.items():
            if not now_due:
                self.dispatcher.schedule(run_at)
                continue
            # A labelled task may suit none of the longest-parked polls: wake them all.
            count = ready[(labels, now_due)] if counted and labels not in labelled else None
            self.dispatcher.wake(wake_key(labels[0], labels[1]), labels[2], count)


class Work:
    """Opens units of work on the storage, runs the before-commit hooks in them and
    applies their effects after commit."""

    def __init__(self, storage: Storage, effects: Effects) -> None:
        self._storage = storage
        self._effects = effects
        self._hooks: list[Hook] = []

    def before_commit(self, hook: Hook) -> None:
        self._hooks.append(hook)

    @asynccontextmanager
    async def __call__(self, now: int | None = None) -> AsyncIterator[UnitOfWork]:
        uow = UnitOfWork(now if now is not None else now_ms())
        async with self._storage.transaction() as tx:
            uow.tx = tx
            yield uow
            for hook in self._hooks:
                await hook(uow)
            keys, rate_keys = uow.keys, uow.rate_keys
            for row in uow.created:
                if row["status"] == "held":  # P-KEY-1, P-RATE-1: new, waiting to be admitted
                    if row["concurrency_key"] is not None:
                        keys.add((row["tenant"], row["concurrency_key"]))
                    else:
                        rate_keys.add((row["tenant"], str(row["rate_limit_key"])))
            if keys or tx.touched:  # P-KEY-3: before commit, so no freed slot stays empty
                uow.promoted += await tx.admit(keys, uow.now)
            if rate_keys or tx.touched_rate:  # P-RATE-3
                admitted = await tx.admit_rate(rate_keys, uow.now)
                uow.promoted += admitted.labels
                if admitted.timer is not None:  # the next token: the scheduled-task timer
                    uow.timer = min(admitted.timer, uow.timer or admitted.timer)
        uow.tx = None
        await self._effects.apply(uow)

    async def applied(self, changes: Changes) -> None:
        """Effects of a change the storage committed by itself (a claim, a promotion)."""
        await self._effects.apply(changes)
