"""Queue statistics (GET /queues, the metrics gauges): stored counts per (queue,
handler) plus the pairs polled recently, so a polled, empty queue still shows (P-OBS-1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orch8_server import timefmt

if TYPE_CHECKING:
    from orch8_server.lifecycle.engine import Engine


async def queue_rows(engine: Engine, queue_name: str | None) -> list[dict[str, Any]]:
    """One row per (queue, handler), sorted, in the QueueStats shape."""
    now = timefmt.now_ms()
    stats = {
        (r["queue_name"], r["handler_name"]): r
        for r in await engine.storage.queue_stats(queue_name)
    }
    for pair in engine.pollers.pairs(now):  # P-OBS-1: a polled, empty queue still shows up
        if queue_name is None or pair[0] == queue_name:
            stats.setdefault(
                pair,
                {
                    "queue_name": pair[0],
                    "handler_name": pair[1],
                    "pending": 0,
                    "scheduled": 0,
                    "running": 0,
                    "failed": 0,
                    "oldest_pending_run_at": None,
                },
            )
    rows = []
    for (queue, handler), s in sorted(stats.items()):
        oldest = s.pop("oldest_pending_run_at")
        s["oldest_pending_age_ms"] = None if oldest is None else max(0, now - oldest)
        s["active_pollers"] = engine.pollers.count(queue, handler, now)
        rows.append(s)
    return rows
