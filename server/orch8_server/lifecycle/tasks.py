"""Producer and operator rules: enqueue, get, list, cancel, retry, attempt history."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from orch8_server import ids, timefmt
from orch8_server.lifecycle import transitions, views
from orch8_server.lifecycle.backpressure import Backpressure
from orch8_server.lifecycle.effects import Work
from orch8_server.lifecycle.retry import effective_policy
from orch8_server.lifecycle.state import RunState
from orch8_server.lifecycle.tenancy import owned
from orch8_server.lifecycle.transitions import FINISHED
from orch8_server.lifecycle.workflow_steps import ENGINE_KEY_PREFIX
from orch8_server.problems import Problem, not_found
from orch8_server.storage.base import Row, Storage, TaskFilter, Tx

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
    key, limit = body.get("concurrency_key"), body.get("max_concurrency")
    rate_key = body.get("rate_limit_key")
    if key is None:
        if limit is not None:  # P-KEY-5
            raise _field_problem(
                f"{pointer}/max_concurrency", "max_concurrency needs a concurrency_key"
            )
    else:
        limit = 1 if limit is None else int(limit)  # P-KEY-1
        if rate_key is not None:  # P-RATE-5
            raise _field_problem(
                f"{pointer}/rate_limit_key",
                "a task names a concurrency_key or a rate_limit_key, not both",
            )
    if status == "pending" and (key is not None or rate_key is not None):
        status = "held"  # claimable once the unit's admission gives it a slot or a token
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
        "concurrency_key": key,
        "max_concurrency": limit,
        "rate_limit_key": rate_key,
    }


def encode_cursor(seq: int) -> str:
    return str(seq)


def decode_cursor(cursor: str) -> int:
    """A cursor is a position in the task log; tasks before it come next (the contract
    pins it to 1-19 digits, so every valid cursor means something)."""
    return min(int(cursor), 2**63 - 1)


class Tasks:
    def __init__(
        self, storage: Storage, work: Work, backpressure: Backpressure, state: RunState
    ) -> None:
        self.storage = storage
        self.work = work
        self.backpressure = backpressure
        self.state = state

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
        if self.backpressure.limits_enqueues:  # P-BP-1, P-BP-2: refused before anything is stored
            await self.backpressure.admit_enqueue(
                [row["queue_name"] for row in rows], tenant=tenant
            )
        results: list[tuple[Row, bool]] = []
        async with self.work(now) as uow:
            for row in rows:
                stored, created = await uow.db.insert_task(row)
                results.append((stored, created))
                if created:
                    uow.created.append(stored)
        return [views.task(row) for row, _ in results], any(created for _, created in results)

    async def _owned(self, tx: Tx, tenant: str, task_id: str) -> Row:
        row = owned(await tx.get_task(task_id), tenant)  # P-TEN-3
        if row is None:
            raise not_found("task", task_id)
        return row

    async def get(self, tenant: str, task_id: str) -> Task:
        row = owned(await self.storage.get_task(task_id), tenant)  # P-TEN-3
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
            if task["status"] in FINISHED or left <= 0:
                return task
            await asyncio.sleep(min(delay, left / 1000))
            delay = min(delay * 2, 0.25)

    async def list(self, flt: TaskFilter, limit: int, cursor: str | None) -> TaskPage:
        before = decode_cursor(cursor) if cursor else None
        rows = await self.storage.list_tasks(flt, limit + 1, before)
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "tasks": [views.task(r) for r in rows],
            "next_cursor": encode_cursor(rows[-1]["seq"]) if more else None,
        }

    async def attempts(self, tenant: str, task_id: str) -> AttemptList:
        row = owned(await self.storage.get_task(task_id), tenant)  # P-TEN-3
        if row is None:
            raise not_found("task", task_id)
        stored = await self.storage.list_attempts(task_id)
        history = [views.attempt(a) for a in stored]
        if row["status"] == "running":
            history.append(views.running_attempt(row))
        success = transitions.completed_attempt(row, (a["lease_id"] for a in stored))
        if success is not None:  # P-DONE-1: the completed row is its last attempt's record
            history.append(views.attempt(success))
        return {"task_id": task_id, "attempts": history}

    async def cancel(self, tenant: str, task_id: str, reason: str | None) -> Task:
        """P-CANCEL-1: pending/scheduled/running -> cancelled; finished -> invalid_state."""
        async with self.work() as uow:
            row = await self._owned(uow.db, tenant, task_id)
            change = transitions.cancel(row, uow.now, reason)
            if change is not None:
                row = await uow.apply(change)
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
        self,
        tenant: str,
        task_id: str,
        outcome: Literal["completed", "failed"],
        body: Mapping[str, Any],
    ) -> Task:
        """P-MANUAL-1: an operator completes or fails a pending, scheduled or running task."""
        async with self.work() as uow:
            row = await self._owned(uow.db, tenant, task_id)
            row = await uow.apply(transitions.resolve(row, uow.now, outcome, body))
        return views.task(row)

    async def retry(self, tenant: str, task_id: str, body: TaskRetry) -> Task:
        """P-RETRY-6: failed/cancelled/expired -> pending with a fresh attempt budget."""
        budget = body.get("max_attempts")
        async with self.work() as uow:
            row = await self._owned(uow.db, tenant, task_id)
            change = transitions.retry(
                row, uow.now, None if budget is None else int(budget), int(body.get("delay_ms", 0))
            )
            row = await uow.apply(change)
        return views.task(row)

    async def promote_due(self) -> int | None:
        """Timer callback: scheduled tasks whose run_at arrived become pending (P-STATE-2)."""
        if self.state.draining:
            return None
        async with self.work() as uow:
            uow.promoted += await uow.db.promote_due(uow.now)
        return await self.storage.next_scheduled_at()
