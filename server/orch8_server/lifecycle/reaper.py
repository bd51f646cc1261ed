"""The reaper: expired leases, overdue tasks, dead workers, due scheduled tasks (P-LEASE-6)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from orch8_server import timefmt
from orch8_server.lifecycle.attempts import LEASE_EXPIRED_CODE, end_attempt
from orch8_server.storage.base import Row, StorageUnavailable, Tx, wake_key

if TYPE_CHECKING:
    from orch8_server.lifecycle.engine import Engine

log = logging.getLogger("orch8.reaper")
BATCH = 500


class Reaper:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    def start(self) -> None:
        self._stop.clear()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="orch8-reaper")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _run(self) -> None:
        interval = self.engine.settings.reaper_interval_ms / 1000
        while not self._stop.is_set():
            try:
                await self.tick()
            except StorageUnavailable as exc:  # database outage: the next tick catches up
                log.warning("reaper tick skipped: %s", exc)
            except Exception:  # keep reaping: one bad tick must not stop reclamation
                log.exception("reaper tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=interval)

    async def tick(self) -> None:
        engine = self.engine
        now = timefmt.now_ms()
        while True:
            async with engine.storage.transaction() as tx:
                expired = await tx.expired_leases(now, BATCH)
                reclaimed = await self.reclaim(
                    tx, expired, LEASE_EXPIRED_CODE, "lease expired before the task finished", now
                )
                advanced = await engine.workflows.advance(tx, reclaimed, now)  # P-WF-5
            self.after_reclaim(reclaimed, now)
            engine.workflows.announce(advanced)
            await engine.leases.controls.freed(  # P-CTRL-2: a capped slot is free again
                (r["tenant"], r["queue_name"], r["handler_name"]) for r in reclaimed
            )
            if len(expired) < BATCH:
                break
        async with engine.storage.transaction() as tx:
            overdue = await tx.expire_overdue(now)  # P-EXPIRE-1
            due = await tx.promote_due(now)  # fallback for the scheduled-task timer
        if overdue:
            engine.metrics.expired.inc(overdue)
        for tenant, queue, handler in due:
            engine.dispatcher.wake(wake_key(tenant, queue), handler)
        await engine.workers.sweep_dead(now)
        engine.pollers.prune(now)

    async def reclaim(
        self, tx: Tx, rows: list[Row], code: str, message: str, now: int
    ) -> list[Row]:
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

    def after_reclaim(self, rows: list[Row], now: int) -> None:
        metrics = self.engine.metrics
        for row in rows:
            labels = (row["tenant"], row["queue_name"], row["handler_name"])  # P-TEN-4
            metrics.reaped.labels(*labels).inc()
            self.engine.history.failed(row["tenant"], row["queue_name"])  # P-OBS-5
            if row["status"] == "failed":
                metrics.failed.labels(*labels).inc()
            else:
                key = wake_key(row["tenant"], row["queue_name"])  # P-TEN-3: its tenant's polls
                self.engine.dispatcher.wake(key, row["handler_name"])
        if rows:
            log.info(
                "reclaimed tasks", extra={"count": len(rows), "code": rows[0]["error"]["code"]}
            )
