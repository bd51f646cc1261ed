"""Queue statistics (GET /queues, the metrics gauges): stored counts per (queue,
handler) plus the pairs polled recently, so a polled, empty queue still shows (P-OBS-1),
with each row's controls and why its pending tasks are not handed out (P-OBS-4), and
every paused or capped queue and capped handler (P-CTRL-3). One tenant's at a time
(P-TEN-3)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from orch8_server import timefmt
from orch8_server.lifecycle.controls import handler_view, queue_view
from orch8_server.lifecycle.pollers import PollerRegistry
from orch8_server.storage.base import Storage, split_wake_key, wake_key

if TYPE_CHECKING:
    from orch8_server._generated.models import BlockedReason, QueueStatsList


async def queue_stats(
    storage: Storage, pollers: PollerRegistry, tenant: str, queue_name: str | None
) -> QueueStatsList:
    """The tenant's QueueStatsList: rows sorted by (queue, handler), then the controls."""
    now = timefmt.now_ms()
    stats: dict[tuple[str, str], dict[str, Any]] = {
        (r["queue_name"], r["handler_name"]): dict(r)
        for r in await storage.queue_stats(tenant, queue_name)
    }
    for key, handler in pollers.pairs(now):  # P-OBS-1: a polled, empty queue shows
        owner, queue = split_wake_key(key)
        pair = (queue, handler)
        if owner == tenant and (queue_name is None or queue == queue_name):
            stats.setdefault(
                pair,
                {
                    "queue_name": pair[0],
                    "handler_name": pair[1],
                    "pending": 0,
                    "scheduled": 0,
                    "running": 0,
                    "failed": 0,
                    "held": 0,
                    "oldest_pending_run_at": None,
                },
            )
    queues, handlers = await storage.controls()
    queues = [q for q in queues if q["tenant"] == tenant]
    handlers = [h for h in handlers if h["tenant"] == tenant]
    running = await storage.running_counts()
    queue_running: Counter[str] = Counter()
    handler_running: Counter[str] = Counter()
    for owner, queue, handler, n in running:
        if owner == tenant:
            queue_running[queue] += n
            handler_running[handler] += n
    controls = {q["queue_name"]: q for q in queues}
    caps = {h["handler_name"]: h["max_running"] for h in handlers}
    unroutable = await _unroutable(storage, tenant, queue_name)
    rows: list[Any] = []
    for (queue, handler), s in sorted(stats.items()):
        oldest = s.pop("oldest_pending_run_at")
        s["oldest_pending_age_ms"] = None if oldest is None else max(0, now - oldest)
        s["active_pollers"] = pollers.count(wake_key(tenant, queue), handler, now)
        control = controls.get(queue)
        s["unroutable"] = unroutable.get((queue, handler), 0)
        s["paused"] = bool(control and control["paused"])
        s["queue_max_running"] = control["max_running"] if control else None
        s["handler_max_running"] = caps.get(handler)
        s["blocked"] = _blocked(s, queue_running[queue], handler_running[handler])
        rows.append(s)
    listed = [q for q in queues if q["paused"] or q["max_running"] is not None]
    return {
        "queues": rows,
        "queue_controls": [
            queue_view(q, queue_running[q["queue_name"]])
            for q in listed
            if queue_name is None or q["queue_name"] == queue_name
        ],
        "handler_controls": [
            handler_view(h, handler_running[h["handler_name"]])
            for h in handlers
            if h["max_running"] is not None
        ],
        "generated_at": timefmt.iso(now),
    }


def _blocked(row: dict[str, Any], queue_running: int, handler_running: int) -> BlockedReason | None:
    """P-OBS-4: paused > queue_cap > handler_cap > held > unroutable; None when nothing is
    pending or nothing blocks."""
    if not row["pending"]:
        return None
    if row["paused"]:
        return "paused"
    cap = row["queue_max_running"]
    if cap is not None and queue_running >= cap:
        return "queue_cap"
    cap = row["handler_max_running"]
    if cap is not None and handler_running >= cap:
        return "handler_cap"
    if row["held"] >= row["pending"]:  # P-KEY-1, P-RATE-1
        return "held"
    if row["unroutable"] >= row["pending"]:
        return "unroutable"
    return None


async def _unroutable(
    storage: Storage, tenant: str, queue_name: str | None
) -> dict[tuple[str, str], int]:
    """P-LABEL-3: pending tasks whose required labels no live registered worker of the
    tenant holds."""
    sets = await storage.pending_label_sets(tenant, queue_name)
    if not sets:
        return {}
    workers = await storage.live_worker_labels(tenant)
    out: Counter[tuple[str, str]] = Counter()
    for queue, handler, required, n in sets:
        if not any(all(w.get(k) == v for k, v in required.items()) for w in workers):
            out[(queue, handler)] += n
    return dict(out)
