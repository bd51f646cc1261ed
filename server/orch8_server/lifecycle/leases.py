"""Worker-task rules: poll/claim, complete, fail, heartbeat, release, and their batches."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from orch8_server import ids, timefmt
from orch8_server.lifecycle import views
from orch8_server.lifecycle.attempts import DEFAULT_FAILURE_CODE, end_attempt
from orch8_server.lifecycle.claims import claim_across, poll_queues
from orch8_server.lifecycle.controls import Controls
from orch8_server.lifecycle.lease_replies import (
    batch_item,
    batch_item_error,
    heartbeat_lease_ms,
    resolved_manually,
)
from orch8_server.lifecycle.retry import backoff_ms
from orch8_server.lifecycle.tenancy import Confinement, owned
from orch8_server.problems import Problem, lease_lost, not_found, task_cancelled
from orch8_server.storage.base import Row, Tx, wake_key

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
    from orch8_server.lifecycle.engine import Engine


class Leases:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.controls = Controls(engine)  # pause, caps, labels (P-CTRL-*, P-LABEL-*)

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
        settings = self.engine.settings
        queues, weights = poll_queues(body)  # P-QUEUE-2..4
        handlers = body.get("handler_names") or None
        worker_id = body.get("worker_id")
        if confined is not None and worker_id is not None:  # P-AUTH-7
            confined.check_claim(await self.controls.worker_of(tenant, worker_id), worker_id)
        lease_ms = int(body.get("lease_ms", settings.lease_ms))
        wait_ms = min(int(body.get("wait_ms", settings.wait_ms)), settings.max_wait_ms)
        start = timefmt.now_ms()
        keys = [wake_key(tenant, queue) for queue in queues]
        for key in keys:
            self.engine.pollers.seen(worker_id, key, handlers, start)
        deadline = start + wait_ms

        dispatcher = self.engine.dispatcher
        # Parked before the claim: no lost wake-up. On every queue of the poll.
        waiter = dispatcher.park(keys, handlers, limit)
        gone: asyncio.Future[Any] | None = None
        backpressure = self.engine.backpressure
        sleeping = False
        try:
            while True:
                waiter.event.clear()
                claimed = await self._claim(
                    tenant, queues, weights, handlers, limit, lease_ms, worker_id
                )
                if claimed or self.engine.draining:
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
            return await self.engine.storage.claim(  # P-TEN-3: the tenant's tasks only
                tenant, queue, handlers, n, now, lease_ms, worker_id, ids.lease_id, labels,
                controls.capped(tenant, queue, handlers),  # P-CTRL-2: serialised under a lock
            )  # fmt: skip

        rows, expired = await claim_across(queues, weights, limit, claim_one, self.engine.rng)
        metrics = self.engine.metrics
        if expired:
            metrics.expired.inc(expired)
        for key, n in Counter(
            (r["tenant"], r["queue_name"], r["handler_name"]) for r in rows
        ).items():
            metrics.claimed.labels(*key).inc(n)
        self.engine.history.claimed(rows)  # P-OBS-5
        self.engine.observe.claimed(rows, now)  # P-TEL-6, P-TEL-2
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
        attempt = await (
            tx.get_attempt(task_id, lease_id) if lease_id else tx.latest_attempt(task_id)
        )
        if attempt is not None:
            if attempt["outcome"] == op and attempt["reply"] is not None:
                reply: TaskOutcome = attempt["reply"]
                return row, reply
            if attempt["outcome"] == "cancelled" and not resolved_manually(attempt):
                raise task_cancelled(task_id)
        raise lease_lost(task_id, lease_id)

    # Complete / fail ---------------------------------------------------------------------

    async def complete(
        self,
        tenant: str,
        task_id: str,
        body: TaskCompletion,
        confined: Confinement | None = None,
    ) -> TaskOutcome:
        item = {**body, "task_id": task_id}
        started = timefmt.now_ms()
        (outcome,), rows = await self._complete_items(tenant, [item], confined)
        self._count_completed(rows, started)
        await self._freed(rows)
        if isinstance(outcome, Problem):
            raise outcome
        return outcome

    async def _complete_items(
        self, tenant: str, items: Sequence[Mapping[str, Any]], confined: Confinement | None
    ) -> tuple[list[TaskOutcome | Problem], list[Row | None]]:
        """Complete items in one transaction: the ones running under their lease by one
        set-based statement, the rest (replays, lost leases, no lease_id) by the
        per-item rules. Returns a reply or a problem per item, and the completed rows."""
        now = timefmt.now_ms()
        out: list[TaskOutcome | Problem] = []
        rows: list[Row | None] = []
        async with self.engine.storage.transaction() as tx:
            # A key confined to queues or handlers has every item checked one by one
            # (P-AUTH-6): the set-based statement knows leases, not scopes.
            fast = [
                (i["task_id"], i["lease_id"], i.get("output"))
                for i in items
                if i.get("lease_id") and (confined is None or not confined.scoped)
            ]
            done = {
                (r["id"], r["lease_id"]): r for r in await tx.complete_running(tenant, fast, now)
            }
            for item in items:
                row = done.pop((item["task_id"], item.get("lease_id")), None)
                try:
                    if row is not None:  # its attempt ended with it (P-DONE-1)
                        reply = views.outcome(row)
                    else:
                        reply, row = await self._complete(
                            tx, tenant, item["task_id"], item, now, confined
                        )
                    rows.append(row)
                    out.append(reply)
                except Problem as problem:
                    out.append(problem)
            advanced = await self.engine.workflows.advance(tx, rows, now)  # P-WF-5
        self.engine.workflows.announce(advanced)
        return out, rows

    async def _complete(
        self,
        tx: Tx,
        tenant: str,
        task_id: str,
        body: Mapping[str, Any],
        now: int,
        confined: Confinement | None,
    ) -> tuple[TaskOutcome, Row | None]:
        """The completion's reply, and the row it completed (None for a replay): the
        caller counts it once the transaction committed."""
        lease_id = body.get("lease_id")
        row, replay = await self._resolve(tx, tenant, task_id, lease_id, "completed", confined)
        if replay is not None:
            return replay, None
        fields = {
            "status": "completed",
            "output": body.get("output"),
            "finished_at": now,
            "updated_at": now,
        }
        await tx.update_task(task_id, fields)
        row.update(fields)
        reply = views.outcome(row)
        await end_attempt(tx, row, now, "completed", None, reply)  # P-DONE-1
        return reply, row

    async def _freed(self, rows: list[Row | None]) -> None:
        """Post-commit: these tasks stopped running; wake polls a running cap held back."""
        if self.controls.any_cap:
            await self.controls.freed(
                {(r["tenant"], r["queue_name"], r["handler_name"]) for r in rows if r}
            )

    def _count_completed(self, rows: list[Row | None], started: int) -> None:
        """Post-commit: one counter update per (queue, handler), not per row."""
        self.engine.observe.completed(rows, started)  # P-TEL-6, P-TEL-2
        keys = Counter(
            (r["tenant"], r["queue_name"], r["handler_name"]) for r in rows if r is not None
        )
        for key, n in keys.items():
            self.engine.metrics.completed.labels(*key).inc(n)
        self.engine.history.completed(rows)  # P-OBS-5

    async def fail(
        self,
        tenant: str,
        task_id: str,
        body: TaskFailureReport,
        confined: Confinement | None = None,
    ) -> TaskOutcome:
        now = timefmt.now_ms()
        async with self.engine.storage.transaction() as tx:
            reply, row = await self._fail(tx, tenant, task_id, body, now, confined)
            advanced = await self.engine.workflows.advance(tx, (row,), now)  # P-WF-5
        self.engine.workflows.announce(advanced)
        self.engine.observe.failed([row], now)  # P-TEL-6, P-TEL-2
        self._after_fail(row, now)
        await self._freed([row])
        return reply

    async def _fail(
        self,
        tx: Tx,
        tenant: str,
        task_id: str,
        body: TaskFailureReport | TaskFailureItem,
        now: int,
        confined: Confinement | None,
    ) -> tuple[TaskOutcome, Row | None]:
        lease_id = body.get("lease_id")
        row, replay = await self._resolve(tx, tenant, task_id, lease_id, "failed", confined)
        if replay is not None:
            return replay, None
        retryable = bool(body.get("retryable", False))
        code = body.get("code") or DEFAULT_FAILURE_CODE
        error = {
            "message": body["error"],
            "code": code,
            "retryable": retryable,
            "details": body.get("details"),
        }
        fields: Row = {"error": error, "updated_at": now}
        if "checkpoint" in body:
            fields["checkpoint"] = body["checkpoint"]  # P-CKPT-1
        if retryable and row["attempt"] < row["max_attempts"]:  # P-RETRY-1
            if "retry_after_ms" in body:
                delay = int(body["retry_after_ms"])  # P-RETRY-4
            else:
                delay = backoff_ms(row["retry"], row["attempt"], self.engine.rng)  # P-RETRY-2
            fields.update(status="scheduled" if delay > 0 else "pending", run_at=now + delay)
        else:
            fields.update(status="failed", finished_at=now)  # P-RETRY-3, P-RETRY-5
        await tx.update_task(task_id, fields)
        row.update(fields)
        reply = views.outcome(row, code)
        await end_attempt(tx, row, now, "failed", error, reply)
        return reply, row

    def _after_fail(self, row: Row | None, now: int) -> None:
        if row is None:
            return
        labels = (row["tenant"], row["queue_name"], row["handler_name"])
        self.engine.history.failed(row["tenant"], row["queue_name"])  # P-OBS-5
        if row["status"] == "failed":
            self.engine.metrics.failed.labels(*labels).inc()
        else:
            self.engine.metrics.requeued.labels(*labels).inc()
            self.engine.made_claimable(*labels, row["run_at"], now)

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
        async with self.engine.storage.transaction() as tx:
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
        now = timefmt.now_ms()
        lease_id = body.get("lease_id")
        async with self.engine.storage.transaction() as tx:
            row, replay = await self._resolve(tx, tenant, task_id, lease_id, "released", confined)
            if replay is not None:
                return replay
            run_at = now + int(body.get("delay_ms", 0))
            ended = dict(row)
            fields = {
                "status": "scheduled" if run_at > now else "pending",
                "attempt": row["attempt"] - 1,
                "run_at": run_at,
                "updated_at": now,
            }
            await tx.update_task(task_id, fields)
            row.update(fields)
            reply = views.outcome(row)
            await end_attempt(tx, ended, now, "released", None, reply)
        self.engine.made_claimable(tenant, row["queue_name"], row["handler_name"], run_at, now)
        await self._freed([row])
        return reply

    # Batches (P-BATCH-1) -----------------------------------------------------------------

    def _item_error(self, task_id: str, problem: Problem) -> BatchItemOutcome:
        self.engine.metrics.problems.labels(problem.code).inc()
        return batch_item_error(task_id, problem)

    async def complete_batch(
        self, tenant: str, items: list[TaskCompletionItem], confined: Confinement | None = None
    ) -> BatchOutcome:
        started = timefmt.now_ms()
        outcomes, rows = await self._complete_items(tenant, items, confined)
        self._count_completed(rows, started)
        await self._freed(rows)
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
        now = timefmt.now_ms()
        out, rows = [], []
        async with self.engine.storage.transaction() as tx:
            await tx.tasks_by_ids([item["task_id"] for item in items])  # one read, locked
            for item in items:
                try:
                    reply, row = await self._fail(tx, tenant, item["task_id"], item, now, confined)
                    rows.append(row)
                    out.append(
                        batch_item(reply, "failed" if reply["status"] == "failed" else "requeued")
                    )
                except Problem as problem:
                    out.append(self._item_error(item["task_id"], problem))
            advanced = await self.engine.workflows.advance(tx, rows, now)  # P-WF-5
        self.engine.workflows.announce(advanced)
        self.engine.observe.failed(rows, now)  # P-TEL-6, P-TEL-2
        for row in rows:
            self._after_fail(row, now)
        await self._freed(rows)
        return {"items": out}
