"""Worker-task rules: poll/claim, complete, fail, heartbeat, release, and their batches."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from orch8_server import ids, timefmt
from orch8_server.config import Settings
from orch8_server.lifecycle import transitions, views
from orch8_server.lifecycle.backpressure import Backpressure
from orch8_server.lifecycle.claims import claim_across, poll_queues
from orch8_server.lifecycle.controls import Controls
from orch8_server.lifecycle.dispatcher import Dispatcher
from orch8_server.lifecycle.effects import Changes, UnitOfWork, Work
from orch8_server.lifecycle.lease_replies import (
    batch_item,
    batch_item_error,
    ended_attempt,
    heartbeat_lease_ms,
    resolved_manually,
)
from orch8_server.lifecycle.pollers import PollerRegistry
from orch8_server.lifecycle.state import RunState
from orch8_server.lifecycle.tenancy import Confinement, owned
from orch8_server.metrics import Metrics
from orch8_server.problems import Problem, lease_lost, not_found, task_cancelled
from orch8_server.storage.base import ClaimParams, Row, Storage, Tx, wake_key

if TYPE_CHECKING:
    from orch8_server._generated.models import (
        BatchItemOutcome,
        BatchOutcome,
        ClaimedTask,
        PollBatchOptions,
        PollOptions,
        TaskCompletion,
        TaskCompletionItem,
        TaskFailureItem,
        TaskFailureReport,
        TaskHeartbeat,
        TaskLeaseStatus,
        TaskOutcome,
        TaskRelease,
    )


class Leases:
    def __init__(
        self,
        settings: Settings,
        storage: Storage,
        work: Work,
        controls: Controls,
        dispatcher: Dispatcher,
        pollers: PollerRegistry,
        backpressure: Backpressure,
        metrics: Metrics,
        state: RunState,
        rng: random.Random,
    ) -> None:
        self.settings = settings
        self.storage = storage
        self.work = work
        self.controls = controls  # pause, caps, labels (P-CTRL-*, P-LABEL-*)
        self.dispatcher = dispatcher
        self.pollers = pollers
        self.backpressure = backpressure
        self.metrics = metrics  # problems of batch items only
        self.state = state
        self.rng = rng

    # Claim -----------------------------------------------------------------------------

    async def poll(
        self,
        tenant: str,
        body: PollOptions | PollBatchOptions,
        limit: int,
        abandoned: Callable[[], Awaitable[Any]] | None = None,
        confined: Confinement | None = None,
    ) -> list[ClaimedTask]:
        """Claim up to `limit` tasks, long-polling up to wait_ms (P-POLL-1..5).

        `abandoned` returns an awaitable that finishes when the caller went away; a poll
        whose caller disconnected stops waiting and claims nothing (P-POLL-7). Only the
        tenant's tasks are claimed, and only its wake-ups end the wait (P-TEN-3).
        """
        settings = self.settings
        queues, weights = poll_queues(body)  # P-QUEUE-2..4
        handlers = body.get("handler_names") or None
        worker_id = body.get("worker_id")
        if confined is not None and worker_id is not None:  # P-AUTH-7
            confined.check_claim(await self.controls.worker_of(tenant, worker_id), worker_id)
        lease_ms = int(body.get("lease_ms", settings.lease_ms))
        wait_ms = min(int(body.get("wait_ms", settings.wait_ms)), settings.max_wait_ms)
        start = timefmt.now_ms()
        keys = [wake_key(tenant, queue) for queue in queues]
        poller = self.pollers.arrived(worker_id, keys, handlers)  # P-OBS-1
        deadline = start + wait_ms

        dispatcher = self.dispatcher
        # Parked before the claim: no lost wake-up. On every queue of the poll.
        waiter = dispatcher.park(keys, handlers, limit)
        gone: asyncio.Future[Any] | None = None
        backpressure = self.backpressure
        sleeping = False
        try:
            while True:
                waiter.event.clear()
                claimed = await self._claim(
                    tenant, queues, weights, handlers, limit, lease_ms, worker_id
                )
                if claimed or self.state.draining:
                    return claimed
                remaining = deadline - timefmt.now_ms()
                if remaining <= 0:
                    return []
                if not sleeping:
                    # P-BP-3: a poll served at once passes; one that would wait over the
                    # cap gets 503 having claimed nothing.
                    backpressure.may_park()
                    backpressure.sleeping += 1
                    sleeping = True
                if gone is None and abandoned is not None:
                    gone = asyncio.ensure_future(abandoned())
                woken = asyncio.ensure_future(waiter.event.wait())
                waits = {woken} if gone is None else {woken, gone}
                await asyncio.wait(
                    waits, timeout=remaining / 1000, return_when=asyncio.FIRST_COMPLETED
                )
                woken.cancel()
                if gone is not None and gone.done():
                    return []
        finally:
            self.pollers.left(poller, timefmt.now_ms())
            if sleeping:
                backpressure.sleeping -= 1
            dispatcher.unpark(waiter)
            if waiter.event.is_set():
                # Woken since its last claim began (caller gone, an error, a wake during
                # the claim): those tasks may not be in its claim, so pass the wake-up on
                # to the polls that could claim them, or they would wait for the next event.
                dispatcher.pass_on(waiter)
            if gone is not None and not gone.done():
                gone.cancel()

    async def _claim(
        self,
        tenant: str,
        queues: list[str],
        weights: dict[str, int] | None,
        handlers: list[str] | None,
        limit: int,
        lease_ms: int,
        worker_id: str | None,
    ) -> list[ClaimedTask]:
        controls = self.controls
        await controls.current()
        labels = await controls.labels_of(tenant, worker_id)  # P-LABEL-1
        now = timefmt.now_ms()

        async def claim_one(queue: str, n: int) -> tuple[list[Row], int]:
            if controls.paused(wake_key(tenant, queue)):  # P-CTRL-1 (re-checked in the claim)
                return [], 0
            return await self.storage.claim(
                ClaimParams(  # P-TEN-3: the tenant's tasks only
                    tenant, queue, handlers, n, now, lease_ms, worker_id, ids.lease_id, labels,
                    controls.capped(tenant, queue, handlers),  # P-CTRL-2: serialised under a lock
                )
            )  # fmt: skip

        rows, expired = await claim_across(queues, weights, limit, claim_one, self.rng)
        if rows or expired:  # each claim committed by itself: its effects follow
            await self.work.applied(Changes(now, claimed=rows, expired=expired))
            paced = {(r["tenant"], r["rate_limit_key"]) for r in rows if r["rate_limit_key"]}
            if paced:  # P-RATE-2: a claimed admitted task lets the next held one in
                async with self.work() as uow:
                    uow.rate_keys |= paced
        return [views.claimed_task(row) for row in rows]

    # Lease resolution (P-LEASE-3, P-LEASE-4, P-IDEM-1, P-CANCEL-2) -----------------------

    async def _resolve(
        self,
        tx: Tx,
        tenant: str,
        task_id: str,
        lease_id: str | None,
        op: str,
        confined: Confinement | None,
    ) -> tuple[Row, TaskOutcome | None]:
        """Return (row, None) when the call acts on the current lease, or (row, reply)
        for an idempotent repeat (the stored reply); raise the matching problem otherwise.
        Another tenant's task is not found (P-TEN-3), and so is one outside a worker
        key's scope (P-AUTH-6)."""
        row = owned(await tx.get_task(task_id), tenant)
        if row is None:
            raise not_found("task", task_id)
        if confined is not None:
            await confined.check_task(tx, row, task_id, lease_id)  # P-AUTH-6
        if row["status"] == "running" and (lease_id is None or row["lease_id"] == lease_id):
            return row, None
        if lease_id is None and row["status"] == "cancelled":
            raise task_cancelled(task_id)
        attempt = await ended_attempt(tx, row, lease_id)
        if attempt is not None:
            if attempt["outcome"] == op and attempt["reply"] is not None:
                reply: TaskOutcome = attempt["reply"]
                return row, reply
            if attempt["outcome"] == "cancelled" and not resolved_manually(attempt):
                raise task_cancelled(task_id)
        raise lease_lost(task_id, lease_id)

    # Complete / fail / release -----------------------------------------------------------

    async def complete(
        self,
        tenant: str,
        task_id: str,
        body: TaskCompletion,
        confined: Confinement | None = None,
    ) -> TaskOutcome:
        (outcome,) = await self._complete_items(tenant, [{**body, "task_id": task_id}], confined)
        if isinstance(outcome, Problem):
            raise outcome
        return outcome

    async def _complete_items(
        self, tenant: str, items: Sequence[Mapping[str, Any]], confined: Confinement | None
    ) -> list[TaskOutcome | Problem]:
        """Complete items in one unit of work: the ones running under their lease by one
        set-based statement, the rest (replays, lost leases, no lease_id) by the
        per-item rules. Returns a reply or a problem per item."""
        out: list[TaskOutcome | Problem] = []
        async with self.work() as uow:
            # A key confined to queues or handlers has every item checked one by one
            # (P-AUTH-6): the set-based statement knows leases, not scopes.
            fast = [
                (i["task_id"], i["lease_id"], i.get("output"))
                for i in items
                if i.get("lease_id") and (confined is None or not confined.scoped)
            ]
            rows = await uow.db.complete_running(tenant, fast, uow.now)
            if any(r["instance_id"] for r in rows):  # the advance reads steps' outputs here
                outputs = {task_id: output for task_id, _, output in fast}
                for r in rows:
                    if r["instance_id"]:
                        cast("dict[str, Any]", r)["output"] = outputs[r["id"]]
            uow.completed(rows)  # each stored as transitions.complete stores it (tested)
            done: dict[tuple[str, str | None], Row] = {(r["id"], r["lease_id"]): r for r in rows}
            for item in items:
                row = done.pop((item["task_id"], item.get("lease_id")), None)
                try:
                    if row is not None:  # its attempt ended with it (P-DONE-1)
                        out.append(transitions.outcome(row))
                        continue
                    task, replay = await self._resolve(
                        uow.db, tenant, item["task_id"], item.get("lease_id"), "completed", confined
                    )
                    if replay is not None:
                        out.append(replay)
                        continue
                    change = transitions.complete(task, uow.now, item.get("output"))
                    await uow.apply(change)
                    out.append(change.reply)
                except Problem as problem:
                    out.append(problem)
        return out

    async def fail(
        self,
        tenant: str,
        task_id: str,
        body: TaskFailureReport,
        confined: Confinement | None = None,
    ) -> TaskOutcome:
        async with self.work() as uow:
            return await self._fail(uow, tenant, task_id, body, confined)

    async def _fail(
        self,
        uow: UnitOfWork,
        tenant: str,
        task_id: str,
        body: TaskFailureReport | TaskFailureItem,
        confined: Confinement | None,
    ) -> TaskOutcome:
        lease_id = body.get("lease_id")
        row, replay = await self._resolve(uow.db, tenant, task_id, lease_id, "failed", confined)
        if replay is not None:
            return replay
        change = transitions.fail(
            row,
            uow.now,
            body["error"],
            code=body.get("code"),
            retryable=bool(body.get("retryable", False)),
            details=body.get("details"),
            retry_after_ms=int(body["retry_after_ms"]) if "retry_after_ms" in body else None,
            checkpoint=(body["checkpoint"],) if "checkpoint" in body else None,  # P-CKPT-1
            rng=self.rng,
        )
        await uow.apply(change)
        return change.reply

    # Heartbeat / release -----------------------------------------------------------------

    async def heartbeat(
        self,
        tenant: str,
        task_id: str,
        body: TaskHeartbeat,
        confined: Confinement | None = None,
    ) -> TaskLeaseStatus:
        """P-LEASE-5: extend the lease; keep progress and checkpoint (P-CKPT-1)."""
        now = timefmt.now_ms()
        lease = body.get("lease_id")
        async with self.storage.transaction() as tx:
            row = owned(await tx.get_task(task_id), tenant)  # P-TEN-3
            if row is None:
                raise not_found("task", task_id)
            if confined is not None:  # P-AUTH-6: never another holder's lease id
                await confined.check_task(tx, row, task_id, lease)
            mine = lease is None or row["lease_id"] == lease
            if row["status"] == "cancelled" and mine:
                raise task_cancelled(task_id)  # P-CANCEL-1
            if row["status"] != "running" or not mine:
                raise lease_lost(task_id, lease)
            fields: Row = {
                "lease_expires_at": now + heartbeat_lease_ms(body, row["lease_ms"]),
                "updated_at": now,
            }
            if "progress" in body:
                fields["progress"] = body["progress"]
            if "checkpoint" in body:
                fields["checkpoint"] = body["checkpoint"]
            await tx.update_task(task_id, fields)
        return {
            "task_id": task_id,
            "lease_id": row["lease_id"],
            "lease_expires_at": timefmt.iso(fields["lease_expires_at"]),
            "cancel_requested": False,
        }

    async def release(
        self,
        tenant: str,
        task_id: str,
        body: TaskRelease,
        confined: Confinement | None = None,
    ) -> TaskOutcome:
        """P-LEASE-7: back to the queue without spending the attempt."""
        lease_id = body.get("lease_id")
        async with self.work() as uow:
            row, replay = await self._resolve(
                uow.db, tenant, task_id, lease_id, "released", confined
            )
            if replay is not None:
                return replay
            checkpoint = (body["checkpoint"],) if "checkpoint" in body else None  # P-CKPT-1
            change = transitions.release(row, uow.now, int(body.get("delay_ms", 0)), checkpoint)
            await uow.apply(change)
        return change.reply

    # Batches (P-BATCH-1) -----------------------------------------------------------------

    def _item_error(self, task_id: str, problem: Problem) -> BatchItemOutcome:
        self.metrics.problems.labels(problem.code).inc()
        return batch_item_error(task_id, problem)

    async def complete_batch(
        self, tenant: str, items: list[TaskCompletionItem], confined: Confinement | None = None
    ) -> BatchOutcome:
        outcomes = await self._complete_items(tenant, items, confined)
        return {
            "items": [
                self._item_error(item["task_id"], o)
                if isinstance(o, Problem)
                else batch_item(o, "completed")
                for item, o in zip(items, outcomes, strict=True)
            ]
        }

    async def fail_batch(
        self, tenant: str, items: list[TaskFailureItem], confined: Confinement | None = None
    ) -> BatchOutcome:
        out = []
        async with self.work() as uow:
            await uow.db.tasks_by_ids([item["task_id"] for item in items])  # one read, locked
            for item in items:
                try:
                    reply = await self._fail(uow, tenant, item["task_id"], item, confined)
                    out.append(
                        batch_item(reply, "failed" if reply["status"] == "failed" else "requeued")
                    )
                except Problem as problem:
                    out.append(self._item_error(item["task_id"], problem))
        return {"items": out}
