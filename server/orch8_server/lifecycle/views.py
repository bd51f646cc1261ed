"""Storage rows to wire objects (the shapes of openapi.yaml).

Return types are the TypedDicts generated from the spec (_generated/models.py): the type
checker (make lint) holds every view to its schema, at no run-time cost (a TypedDict is a
plain dict; the module is imported only while type checking).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orch8_server.storage.base import Row
from orch8_server.timefmt import iso, iso_or_none

if TYPE_CHECKING:
    from orch8_server._generated.models import (
        Attempt,
        ClaimedTask,
        Lease,
        Task,
        Worker,
    )


def lease(row: Row) -> Lease:
    return {
        "id": row["lease_id"],
        "worker_id": row["worker_id"],
        "attempt": row["attempt"],
        "expires_at": iso(row["lease_expires_at"]),
    }


def task(row: Row) -> Task:
    status = row["status"]
    if status == "held":  # P-KEY-6: a task waiting for a slot of its key is pending
        status = "pending"
    return {
        "id": row["id"],
        "tenant": row["tenant"],  # P-TEN-1
        "handler_name": row["handler_name"],
        "queue_name": row["queue_name"],
        "status": status,
        "priority": row["priority"],
        "params": row["params"],
        "context": row["context"],
        "headers": row["headers"],
        "attempt": row["attempt"],
        "max_attempts": row["max_attempts"],
        "retry": row["retry"],
        "run_at": iso(row["run_at"]),
        "good_until": iso_or_none(row["good_until"]),
        "idempotency_key": row["idempotency_key"],
        "created_at": iso(row["created_at"]),
        "updated_at": iso(row["updated_at"]),
        "started_at": iso_or_none(row["started_at"]),
        "finished_at": iso_or_none(row["finished_at"]),
        "next_attempt_at": iso(row["run_at"]) if status == "scheduled" and row["attempt"] else None,
        "worker_id": row["worker_id"],
        "lease": lease(row) if status == "running" else None,
        "output": row["output"],
        "error": row["error"],
        "checkpoint": row["checkpoint"],
        "progress": row["progress"],
        "cancel_reason": row["cancel_reason"],
        "required_labels": row.get("required_labels") or {},  # P-LABEL-1
        "concurrency_key": row["concurrency_key"],  # P-KEY-1
        "max_concurrency": row["max_concurrency"],
        "rate_limit_key": row["rate_limit_key"],  # P-RATE-1
    }


def claimed_task(row: Row) -> ClaimedTask:
    created = iso(row["created_at"])
    return {
        "id": row["id"],
        "handler_name": row["handler_name"],
        "queue_name": row["queue_name"],
        "params": row["params"],
        "context": row["context"],
        "headers": row["headers"],
        "priority": row["priority"],
        "attempt": row["attempt"],
        "max_attempts": row["max_attempts"],
        "lease": lease(row),
        "checkpoint": row["checkpoint"],
        "good_until": iso_or_none(row["good_until"]),
        "created_at": created,
        # When this attempt became claimable: a delay, schedule or backoff moves run_at
        # past created_at (contract ClaimedTask.ready_at; schedule-to-start, P-TEL-4).
        "ready_at": iso(max(row["created_at"], row["run_at"])),
        # Seed 000 reads attempt metadata here.
        "metadata": {
            "attempt": row["attempt"],
            "max_attempts": row["max_attempts"],
            "created_at": created,
        },
    }


def attempt(row: Row) -> Attempt:
    return {
        "attempt": row["attempt"],
        "lease_id": row["lease_id"],
        "worker_id": row["worker_id"],
        "started_at": iso(row["started_at"]),
        "ended_at": iso_or_none(row["ended_at"]),
        "outcome": row["outcome"],
        "error": row["error"],
    }


def running_attempt(row: Row) -> Attempt:
    """The attempt in progress, synthesised from the task's current lease."""
    return attempt(
        {
            "attempt": row["attempt"],
            "lease_id": row["lease_id"],
            "worker_id": row["worker_id"],
            "started_at": row["lease_started_at"],
            "ended_at": None,
            "outcome": "running",
            "error": None,
        }
    )


def worker(row: Row, active_tasks: int, heartbeat_ms: int, dead_after_ms: int) -> Worker:
    return {
        "worker_id": row["worker_id"],
        "tenant": row["tenant"],  # P-TEN-1
        "state": row["state"],
        "directive": row["directive"],
        "hostname": row["hostname"],
        "pid": row["pid"],
        "handlers": row["handlers"],
        "queues": row["queues"],
        "concurrency": row["concurrency"],
        "labels": row["labels"],
        "sdk": row["sdk"],
        "active_tasks": active_tasks,
        "registered_at": iso(row["registered_at"]),
        "last_heartbeat_at": iso(row["last_heartbeat_at"]),
        "heartbeat_interval_ms": heartbeat_ms,
        "dead_after_ms": dead_after_ms,
    }
