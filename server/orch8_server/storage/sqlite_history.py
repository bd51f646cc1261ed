"""SQLite statements of the queue history (P-OBS-5): the `queue_minutes` table.

`minute` is the epoch minute (epoch ms // 60000); `wait_hist` a JSON object of
histogram bucket -> claims. One process owns the file, so a histogram is merged in Python
inside the caller's transaction (the writer's group commit, see sqlite.py) and written
back; the counters add up in SQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, cast

import orjson

from orch8_server.storage.rows import QueueMinuteCounts, QueueMinuteRow, TenantRow

_ADD = (
    "INSERT INTO queue_minutes (tenant, queue_name, minute, enqueued, completed, failed, "
    "wait_hist) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, queue_name, minute) DO UPDATE SET "
    "enqueued = enqueued + excluded.enqueued, completed = completed + excluded.completed, "
    "failed = failed + excluded.failed, wait_hist = coalesce(excluded.wait_hist, wait_hist)"
)
_DEPTH = (
    "INSERT INTO queue_minutes (tenant, queue_name, minute, depth) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (tenant, queue_name, minute) DO UPDATE SET depth = excluded.depth"
)


def pending_counts(conn: sqlite3.Connection) -> dict[tuple[str, str], int]:
    """Pending tasks per (tenant, queue) (the depth sample)."""
    return {
        (tenant, queue): n
        for tenant, queue, n in conn.execute(
            "SELECT tenant, queue_name, COUNT(*) FROM tasks WHERE status = 'pending' "
            "GROUP BY tenant, queue_name"
        )
    }


# P-BP-2: pending through the tasks_claim_handler partial index (queue_name second), scheduled
# through tasks_scheduled/tasks_status_seq (unfinished rows only); each part stops at the
# limit, so the read is bounded whatever the table holds.
QUEUE_DEPTH = (
    "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM tasks INDEXED BY tasks_claim_handler "
    "WHERE tenant = ?3 AND queue_name = ?1 "
    "AND status = 'pending' LIMIT ?2)) + (SELECT COUNT(*) FROM (SELECT 1 FROM tasks "
    "WHERE status = 'scheduled' AND tenant = ?3 AND queue_name = ?1 LIMIT ?2))"
)


def queue_depth(conn: sqlite3.Connection, tenant: str, queue_name: str, limit: int) -> int:
    """Pending + scheduled tasks of the tenant's queue, up to `limit` each (P-BP-2, P-TEN-3)."""
    return int(conn.execute(QUEUE_DEPTH, (queue_name, limit, tenant)).fetchone()[0])


def add_queue_minutes(
    conn: sqlite3.Connection,
    counts: Sequence[QueueMinuteCounts],
    minute: int,
    depths: dict[tuple[str, str], int],
    prune_before: int,
) -> None:
    """Add `counts`, set the depth of `minute`, drop the minutes before `prune_before`."""
    rows = []
    for c in counts:
        hist = c["wait_hist"]
        if hist:
            found = conn.execute(
                "SELECT wait_hist FROM queue_minutes WHERE tenant = ? AND queue_name = ? "
                "AND minute = ?",
                (c["tenant"], c["queue_name"], c["minute"]),
            ).fetchone()
            merged = dict(orjson.loads(found[0])) if found and found[0] else {}
            for bucket, n in hist.items():
                merged[bucket] = merged.get(bucket, 0) + n
            hist = merged
        text = orjson.dumps(hist).decode() if hist else None
        rows.append(
            (c["tenant"], c["queue_name"], c["minute"], c["enqueued"], c["completed"],
             c["failed"], text)
        )  # fmt: skip
    if rows:
        conn.executemany(_ADD, rows)
    if depths:
        conn.executemany(_DEPTH, [(t, q, minute, n) for (t, q), n in sorted(depths.items())])
    conn.execute("DELETE FROM queue_minutes WHERE minute < ?", (prune_before,))


def queue_minutes(
    conn: sqlite3.Connection, tenant: str, queue_name: str, since: int
) -> list[QueueMinuteRow]:
    """The stored minutes of `queue_name` from `since` on, oldest first."""
    cols = ("minute", "enqueued", "completed", "failed", "depth", "wait_hist")
    out: list[Any] = []
    for raw in conn.execute(
        "SELECT " + ", ".join(cols) + " FROM queue_minutes "
        "WHERE tenant = ? AND queue_name = ? AND minute >= ? ORDER BY minute",
        (tenant, queue_name, since),
    ):
        row = dict(zip(cols, raw, strict=True))
        row["wait_hist"] = orjson.loads(row["wait_hist"]) if row["wait_hist"] else None
        out.append(row)
    return cast("list[QueueMinuteRow]", out)


def list_tenants(conn: sqlite3.Connection) -> list[TenantRow]:
    """P-TEN-4: every tenant with a task or a worker, with both counts, in tenant order."""
    counts: dict[str, TenantRow] = {}
    for tenant, n in conn.execute("SELECT tenant, COUNT(*) FROM tasks GROUP BY tenant"):
        counts.setdefault(tenant, {"tenant": tenant, "tasks": 0, "workers": 0})["tasks"] = n
    for tenant, n in conn.execute("SELECT tenant, COUNT(*) FROM workers GROUP BY tenant"):
        counts.setdefault(tenant, {"tenant": tenant, "tasks": 0, "workers": 0})["workers"] = n
    return [counts[t] for t in sorted(counts)]


# P-TEN-4: the distinct tenants of the tasks table as a skip scan of tasks_status_seq (one
# index probe per tenant; it leads with the tenant), so a scrape stays cheap however many rows a tenant has.
TENANT_NAMES = (
    "WITH RECURSIVE t(tenant) AS (SELECT min(tenant) FROM tasks UNION ALL "
    "SELECT (SELECT min(tenant) FROM tasks WHERE tenant > t.tenant) FROM t "
    "WHERE t.tenant IS NOT NULL) "
    "SELECT tenant FROM t WHERE tenant IS NOT NULL UNION SELECT tenant FROM workers"
)


def tenant_names(conn: sqlite3.Connection) -> list[str]:
    """Every tenant with a task or a worker, sorted (P-TEN-4)."""
    return sorted(t for (t,) in conn.execute(TENANT_NAMES))
