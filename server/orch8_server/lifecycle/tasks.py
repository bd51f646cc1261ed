"""Producer and operator rules: enqueue, get, list, cancel, retry, attempt history."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from orch8_server import ids, timefmt
from orch8_server.lifecycle import views
from orch8_server.lifecycle.attempts import MANUAL_CODE, end_attempt
from orch8_server.lifecycle.retry import effective_policy
from orch8_server.lifecycle.tenancy import owned
from orch8_server.lifecycle.workflow_steps import ENGINE_KEY_PREFIX
from orch8_server.problems import Problem, not_found
from orch8_server.storage.base import Row, TaskFilter, wake_key

if TYPE_CHECKING:
    from orch8_server._generated.models import (
        AttemptList,
        ManualCompletion,
        ManualFailure,
        NewTask,
        Task,
        TaskPage,
        TaskRetry,
    )
    from orch8_server.lifecycle.engine import Engine

DEFAULT_QUEUE = "default"  # P-QUEUE-1


def _field_problem(pointer: str, detail: str) -> Problem:
    return Problem("validation_error", detail, errors=[{"pointer": pointer, "detail": detail}])


def _instant(body: Mapping[str, Any], name: str, pointer: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    ms = timefmt.parse(value)
    if ms is None:
        raise _field_problem(f"{pointer}/{name}", "must be an RFC 3339 date-time")
    return ms


def new_task_row(
    body: Mapping[str, Any], now: int, pointer: str = "", tenant: str = "default"
) -> Row:
    """Build the row of a new task of `tenant` from a validated NewTask body (P-TASK-1)."""
    run_at = _instant(body, "run_at", pointer)
    run_at = (now if run_at is None else run_at) + int(body.get("delay_ms", 0))  # P-TASK-1
    good_until = _instant(body, "good_until", pointer)
    policy = effective_policy(body.get("retry"))
    status = "scheduled" if run_at > now else "pending"
    finished_at = None
    if good_until is not None and good_until <= now:
        status, finished_at = "expired", now  # P-EXPIRE-1: already past its deadline
    return {
        "id": ids.task_id(),
        "handler_name": body["handler_name"],
        "queue_name": body.get("queue_name", DEFAULT_QUEUE),
        "status": status,
        "priority": int(body.get("priority", 0)),
        "params": body.get("params", {}),
        "context": body.get("context", {}),
        "headers": body.get("headers", {}),
        "attempt": 0,
        "max_attempts": policy["max_attempts"],
        "retry": policy,
        "run_at": run_at,
        "good_until": good_until,
        "idempotency_key": body.get("idempotency_key"),
        "created_at": now,
        "updated_at": now,
        "started_at": None,
        "finished_at": finished_at,
        "worker_id": None,
        "lease_id": None,
        "lease_expires_at": None,
        "lease_ms": None,
        "lease_started_at": None,
        "output": None,
        "error": None,
        "checkpoint": None,
        "progress": None,
        "cancel_reason": None,
        "required_labels": body.get("required_labels") or None,  # P-LABEL-1: NULL for {}
        "tenant": tenant,  # P-TEN-1
    }


def encode_cursor(seq: int) -> str:
    return str(seq)


def decode_cursor(cursor: str) -> int:
    """A cursor is a position in the task log; tasks before it come next (the contract
    pins it to 1-19 digits, so every valid cursor means something)."""
    return min(int(cursor), 2**63 - 1)


class Tasks:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def enqueue(
        self, tenant: str, bodies: list[NewTask], pointer_prefix: str
    ) -> tuple[list[Task], bool]:
        """Create tasks of `tenant` atomically; returns their views and whether any was new."""
        now = timefmt.now_ms()
        for i, body in enumerate(bodies):  # P-TASK-3: the engine's keys are not the caller's
            if str(body.get("idempotency_key", "")).startswith(ENGINE_KEY_PREFIX):
                where = f"{pointer_prefix}/{i}" if pointer_prefix else ""
                raise _field_problem(
                    f"{where}/idempotency_key",
                    f"must not begin with {ENGINE_KEY_PREFIX!r} (reserved for workflow steps)",
                )
        rows = [
            new_task_row(body, now, f"{pointer_prefix}/{i}" if pointer_prefix else "", tenant)
            for i, body in enumerate(bodies)
        ]
        backpressure = self.engine.backpressure
        if backpressure.limits_enqueues:  # P-BP-1, P-BP-2: refused before anything is stored
            await backpressure.admit_enqueue([row["queue_name"] for row in rows], tenant=tenant)
        results: list[tuple[Row, bool]] = []
        async with self.engine.storage.transaction() as tx:
            for row in rows:
                results.append(await tx.insert_task(row))
        # Count and wake once per (queue, handler), not per row: batches share them.
        enqueued: Counter[tuple[str, str]] = Counter()
        due: dict[tuple[str, str, bool], int] = {}
        ready: Counter[tuple[str, str, bool]] = Counter()
        labelled: set[tuple[str, str]] = set()
        expired = 0
        for row, created in results:
            if not created:
                continue
            pair = (row["queue_name"], row["handler_name"])
            enqueued[pair] += 1
            if row["status"] in ("pending", "scheduled"):
                # One wake per pair for what is claimable now (enough polls for that many
                # tasks); the earliest future run_at per pair arms the timer.
                key = (*pair, row["run_at"] <= now)
                due[key] = min(due.get(key, row["run_at"]), row["run_at"])
                ready[key] += 1
                if row["required_labels"]:
                    labelled.add(pair)
            elif row["status"] == "expired":
                expired += 1
        metrics = self.engine.metrics
        for pair, n in enqueued.items():
            metrics.enqueued.labels(tenant, *pair).inc(n)
        self.engine.history.enqueued(tenant, enqueued)  # P-OBS-5
        for (queue, handler, now_due), run_at in due.items():
            # A labelled task may suit none of the longest-parked polls: wake them all.
            counted = now_due and (queue, handler) not in labelled
            count = ready[(queue, handler, now_due)] if counted else None
            self.engine.made_claimable(tenant, queue, handler, run_at, now, count)
        if expired:
            metrics.expired.inc(expired)
        if self.engine.spans is not None:  # P-TEL-2 (the None check: no cost without)
            self.engine.observe.enqueued([row for row, created in results if created], now)
        return [views.task(row) for row, _ in results], any(created for _, created in results)

    async def get(self, tenant: str, task_id: str) -> Task:
        row = owned(await self.engine.storage.get_task(task_id), tenant)  # P-TEN-3
        if row is None:
            raise not_found("task", task_id)
        return views.task(row)

    async def wait_final(self, tenant: str, task_id: str, wait_ms: int) -> Task:
        """P-WF-9: the task once final (completed, failed, cancelled, expired) or when
        `wait_ms` is over. A deadline-bounded re-read: a task ends on any replica and on
        paths (expiry, the reaper) that announce nothing here."""
        deadline = timefmt.now_ms() + wait_ms
        delay = 0.02
        while True:
            task = await self.get(tenant, task_id)
            left = deadline - timefmt.now_ms()
            if task["status"] in ("completed", "failed", "cancelled", "expired") or left <= 0:
                return task
            await asyncio.sleep(min(delay, left / 1000))
            delay = min(delay * 2, 0.25)

    async def list(self, flt: TaskFilter, limit: int, cursor: str | None) -> TaskPage:
        before = decode_cursor(cursor) if cursor else None
        rows = await self.engine.storage.list_tasks(flt, limit + 1, before)
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "tasks": [views.task(r) for r in rows],
            "next_cursor": encode_cursor(rows[-1]["seq"]) if more else None,
        }

    async def attempts(self, tenant: str, task_id: str) -> AttemptList:
        storage = self.engine.storage
        row = owned(await storage.get_task(task_id), tenant)  # P-TEN-3
        if row is None:
            raise not_found("task", task_id)
        history = [views.attempt(a) for a in await storage.list_attempts(task_id)]
        if row["status"] == "running":
            history.append(views.running_attempt(row))
        return {"task_id": task_id, "attempts": history}

    async def cancel(self, tenant: str, task_id: str, reason: str | None) -> Task:
        """P-CANCEL-1: pending/scheduled/running -> cancelled; finished -> invalid_state."""
        now = timefmt.now_ms()
        async with self.engine.storage.transaction() as tx:
            row = owned(await tx.get_task(task_id), tenant)  # P-TEN-3
            if row is None:
                raise not_found("task", task_id)
            status = row["status"]
            if status == "cancelled":
                return views.task(row)
            if status in ("completed", "failed", "expired"):
                raise Problem(
                    "invalid_state",
                    f"task {task_id} is {status}; only unfinished tasks can be cancelled",
                )
            fields = {
                "status": "cancelled",
                "finished_at": now,
                "updated_at": now,
                "cancel_reason": reason,
            }
            if status == "running":
                # The lease holder hears of it through heartbeats; its lease id stays on the
                # row so complete/fail answer task_cancelled, not lease_lost (P-CANCEL-2).
                await end_attempt(tx, row, now, "cancelled", None, None)
            await tx.update_task(task_id, fields)
            row.update(fields)
            advanced = await self.engine.workflows.advance(tx, (row,), now)  # P-WF-5
        self.engine.workflows.announce(advanced)
        self.engine.metrics.cancelled.labels(tenant, row["queue_name"], row["handler_name"]).inc()
        if status == "running":
            await self.engine.leases.controls.freed(
                [(tenant, row["queue_name"], row["handler_name"])]
            )
        return views.task(row)

    @overload
    async def resolve_manually(
        self, tenant: str, task_id: str, outcome: Literal["completed"], body: ManualCompletion
    ) -> Task: ...
    @overload
    async def resolve_manually(
        self, tenant: str, task_id: str, outcome: Literal["failed"], body: ManualFailure
    ) -> Task: ...
    async def resolve_manually(
        self, tenant: str, task_id: str, outcome: str, body: Mapping[str, Any]
    ) -> Task:
        """P-MANUAL-1: an operator completes or fails a pending, scheduled or running task."""
        now = timefmt.now_ms()
        async with self.engine.storage.transaction() as tx:
            row = owned(await tx.get_task(task_id), tenant)  # P-TEN-3
            if row is None:
                raise not_found("task", task_id)
            if row["status"] not in ("pending", "scheduled", "running"):
                raise Problem(
                    "invalid_state",
                    f"task {task_id} is {row['status']}; only unfinished tasks can be resolved",
                )
            fields: Row = {"status": outcome, "finished_at": now, "updated_at": now}
            if outcome == "completed":
                fields["output"] = body.get("output")
            else:
                fields["error"] = {
                    "message": body["error"],
                    "code": body.get("code", MANUAL_CODE),
                    "retryable": False,
                    "details": body.get("details"),
                }
            was_running = row["status"] == "running"
            if was_running:
                # The worker's attempt is over: the `manual` code on it makes the worker's
                # heartbeat, complete and fail answer 409 lease_lost (P-MANUAL-1).
                ended = {
                    "message": f"task {outcome} manually by an operator",
                    "code": MANUAL_CODE,
                    "retryable": False,
                    "details": None,
                }
                await end_attempt(tx, row, now, "cancelled", ended, None)
            await tx.update_task(task_id, fields)
            row.update(fields)
            advanced = await self.engine.workflows.advance(tx, (row,), now)  # P-WF-5
        self.engine.workflows.announce(advanced)
        counter = (
            self.engine.metrics.completed if outcome == "completed" else self.engine.metrics.failed
        )
        counter.labels(tenant, row["queue_name"], row["handler_name"]).inc()
        self.engine.history.finished(tenant, row["queue_name"], outcome)  # P-OBS-5
        if was_running:
            await self.engine.leases.controls.freed(
                [(tenant, row["queue_name"], row["handler_name"])]
            )
        return views.task(row)

    async def retry(self, tenant: str, task_id: str, body: TaskRetry) -> Task:
        """P-RETRY-6: failed/cancelled/expired -> pending with a fresh attempt budget."""
        now = timefmt.now_ms()
        async with self.engine.storage.transaction() as tx:
            row = owned(await tx.get_task(task_id), tenant)  # P-TEN-3
            if row is None:
                raise not_found("task", task_id)
            if row["status"] not in ("failed", "cancelled", "expired"):
                raise Problem(
                    "invalid_state",
                    f"task {task_id} is {row['status']}; only failed, cancelled or expired tasks can be retried",
                )
            budget = int(body.get("max_attempts", row["retry"]["max_attempts"]))
            run_at = now + int(body.get("delay_ms", 0))
            fields = {
                "status": "scheduled" if run_at > now else "pending",
                "max_attempts": row["attempt"] + budget,
                "run_at": run_at,
                "finished_at": None,
                "cancel_reason": None,
                "good_until": None,  # an operator retry means "run it", deadline or not
                "updated_at": now,
            }
            await tx.update_task(task_id, fields)
            row.update(fields)
        self.engine.made_claimable(tenant, row["queue_name"], row["handler_name"], run_at, now)
        return views.task(row)

    async def promote_due(self) -> int | None:
        """Timer callback: scheduled tasks whose run_at arrived become pending (P-STATE-2)."""
        if self.engine.draining:
            return None
        now = timefmt.now_ms()
        async with self.engine.storage.transaction() as tx:
            due = await tx.promote_due(now)
        for tenant, queue, handler in due:
            self.engine.dispatcher.wake(wake_key(tenant, queue), handler)
        return await self.engine.storage.next_scheduled_at()
