"""The record of an attempt that ended (attempt history, P-IDEM-1 replays)."""

from __future__ import annotations

from typing import Any

from orch8_server.storage.base import Row, Tx

# Failure codes the server itself stores (openapi.yaml x-orch8-failure-codes).
# Each is also the attempt outcome where one exists (AttemptOutcome).
DEFAULT_FAILURE_CODE = "worker_error"  # a fail reported without `code`
MANUAL_CODE = "manual"  # an operator resolved the task (P-MANUAL-1)
LEASE_EXPIRED_CODE = "lease_expired"  # P-LEASE-6
WORKER_LOST_CODE = "worker_lost"  # P-WORKER-5


async def end_attempt(
    tx: Tx, row: Row, now: int, outcome: str, error: Any = None, reply: Any = None
) -> None:
    """Record that the attempt held by `row`'s current lease ended with `outcome`.

    `reply` is the answer given to the call that ended it, replayed verbatim when the same
    call is repeated for the same lease (P-IDEM-1).
    """
    await tx.insert_attempt(
        {
            "task_id": row["id"],
            "lease_id": row["lease_id"],
            "attempt": row["attempt"],
            "worker_id": row["worker_id"],
            "started_at": row["lease_started_at"],
            "ended_at": now,
            "outcome": outcome,
            "error": error,
            "reply": reply,
        }
    )
