"""Reclaiming running tasks whose lease ended without a result (P-LEASE-6, P-WORKER-5).

Shared by the reaper (expired leases) and the worker rules (a deregistered or dead
worker's tasks), so neither calls the other. `reclaim` is the rule: what to store, inside
the caller's transaction. `Reclaims.announce` is what follows once that transaction
committed: metrics, the queue history, wake-ups of parked polls, capped slots freed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from orch8_server.lifecycle.attempts import end_attempt
from orch8_server.storage.base import Row, Tx, wake_key

if TYPE_CHECKING:
    from orch8_server.lifecycle.controls import Controls
    from orch8_server.lifecycle.dispatcher import Dispatcher
    from orch8_server.lifecycle.history import History
    from orch8_server.metrics import Metrics

log = logging.getLogger("orch8.reaper")


async def reclaim(tx: Tx, rows: list[Row], code: str, message: str, now: int) -> list[Row]:
    """End each running attempt as `code`; it counts as an attempt (P-LEASE-6)."""
    error = {"message": message, "code": code, "retryable": True, "details": None}
    for row in rows:
        await end_attempt(tx, row, now, code, error, None)
        if row["attempt"] < row["max_attempts"]:
            fields = {"status": "pending", "run_at": now, "error": error, "updated_at": now}
        else:
            fields = {"status": "failed", "finished_at": now, "error": error, "updated_at": now}
        await tx.update_task(row["id"], fields)
        row.update(fields)
    return rows


class Reclaims:
    """The post-commit effects of `reclaim`, on the few engine parts they touch."""

    def __init__(
        self, metrics: Metrics, history: History, dispatcher: Dispatcher, controls: Controls
    ) -> None:
        self.metrics = metrics
        self.history = history
        self.dispatcher = dispatcher
        self.controls = controls

    async def announce(self, rows: list[Row]) -> None:
        """Call after the transaction that reclaimed `rows` committed, never inside it."""
        for row in rows:
            labels = (row["tenant"], row["queue_name"], row["handler_name"])  # P-TEN-4
            self.metrics.reaped.labels(*labels).inc()
            self.history.failed(row["tenant"], row["queue_name"])  # P-OBS-5
            if row["status"] == "failed":
                self.metrics.failed.labels(*labels).inc()
            else:
                key = wake_key(row["tenant"], row["queue_name"])  # P-TEN-3: its tenant's polls
                self.dispatcher.wake(key, row["handler_name"])
        if rows:
            log.info(
                "reclaimed tasks", extra={"count": len(rows), "code": rows[0]["error"]["code"]}
            )
        await self.controls.freed(  # P-CTRL-2: a capped slot is free again
            (r["tenant"], r["queue_name"], r["handler_name"]) for r in rows
        )
