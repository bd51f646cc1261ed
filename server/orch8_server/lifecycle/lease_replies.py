"""Small pieces of the worker-task replies (leases.py): the heartbeat's lease length,
the ended attempt a repeated call refers to and the manual-resolution test of it, and the
per-item answers of batches (P-BATCH-1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orch8_server.lifecycle.attempts import MANUAL_CODE
from orch8_server.lifecycle.transitions import completed_attempt
from orch8_server.problems import Problem
from orch8_server.storage.base import Row, Tx
from orch8_server.storage.rows import AttemptRow, TaskRow

if TYPE_CHECKING:
    from orch8_server._generated.models import BatchItemOutcome, BatchItemStatus, TaskOutcome


def heartbeat_lease_ms(body: Mapping[str, Any], default: int) -> int:
    """`lease_ms`, or its deprecated alias `extend_ms` (spec 1.1.0); never two values."""
    lease_ms, extend_ms = body.get("lease_ms"), body.get("extend_ms")
    if lease_ms is not None and extend_ms is not None and lease_ms != extend_ms:
        raise Problem(
            "validation_error",
            "lease_ms and its deprecated alias extend_ms disagree",
            errors=[
                {"pointer": "/extend_ms", "detail": "differs from lease_ms; send lease_ms only"}
            ],
        )
    chosen = lease_ms if lease_ms is not None else extend_ms
    return int(chosen) if chosen is not None else default


async def ended_attempt(tx: Tx, row: TaskRow, lease_id: str | None) -> AttemptRow | None:
    """The ended attempt of `row` a call under `lease_id` refers to (None: the latest).
    A worker's success is not stored but read from the completed row (P-DONE-1,
    transitions.completed_attempt); its lease is the row's last, so only that lease asks."""
    last = row["lease_id"]
    if row["status"] == "completed" and last is not None and lease_id in (None, last):
        stored = await tx.get_attempt(row["id"], last)
        return stored or completed_attempt(row, ())
    if lease_id is None:
        return await tx.latest_attempt(row["id"])
    return await tx.get_attempt(row["id"], lease_id)


def resolved_manually(attempt: Row) -> bool:
    """An attempt an operator ended by resolving the task (P-MANUAL-1): its worker gets
    lease_lost, not task_cancelled."""
    error = attempt["error"]
    return isinstance(error, dict) and error.get("code") == MANUAL_CODE


def batch_item(reply: TaskOutcome, status: BatchItemStatus) -> BatchItemOutcome:
    return {
        "task_id": reply["task_id"],
        "status": status,
        "attempt": reply["attempt"],
        "attempts_left": reply["attempts_left"],
        "next_attempt_at": reply["next_attempt_at"],
        "problem": None,
    }


def batch_item_error(task_id: str, problem: Problem) -> BatchItemOutcome:
    return {
        "task_id": task_id,
        "status": "error",
        "attempt": None,
        "attempts_left": None,
        "next_attempt_at": None,
        "problem": problem.item(),
    }
