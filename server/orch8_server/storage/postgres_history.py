"""PostgreSQL statements of the queue history (P-OBS-5): the `queue_minutes` table.

`minute` is the epoch minute (epoch ms // 60000); `wait_hist` a jsonb object of
histogram bucket -> claims. Every replica adds its counts with one upsert per row, so
concurrent flushes add up: the counters in SQL, the histograms merged bucket by bucket
in the same statement. Rows are written in (queue, minute) order, one lock order for
every replica.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import asyncpg

from orch8_server.storage.rows import QueueMinuteCounts, QueueMinuteRow, TenantRow

_ADD = """
INSERT INTO queue_minutes AS m (queue_name, minute, enqueued, completed, failed, wait_hist,
    tenant)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (tenant, queue_name, minute) DO UPDATE SET
    enqueued = m.enqueued + EXCLUDED.enqueued,
    completed = m.completed + EXCLUDED.completed,
    failed = m.failed + EXCLUDED.failed,
    wait_hist = CASE
        WHEN EXCLUDED.wait_hist IS NULL THEN m.wait_hist
        WHEN m.wait_hist IS NULL THEN EXCLUDED.wait_hist
        ELSE (
            SELECT jsonb_object_agg(b.key, b.n) FROM (
                SELECT e.key, sum(e.value::bigint) AS n FROM (
                    SELECT key, value FROM jsonb_each_text(m.wait_hist)
                    UNION ALL
                    SELECT key, value FROM jsonb_each_text(EXCLUDED.wait_hist)
                ) AS e GROUP BY e.key
            ) AS b
        )
    END
"""
_DEPTH = (
    "INSERT INTO queue_minutes (tenant, queue_name, minute, depth) VALUES ($1, $2, $3, $4) "
    "ON CONFLICT (tenant, queue_name, minute) DO UPDATE SET depth = EXCLUDED.depth"
)


async def pending_counts(conn: asyncpg.Connection) -> dict[tuple[str, str], int]:
    """Pending tasks per (tenant, queue) (the depth sample; tasks_claim_handler covers it)."""
    rows = await conn.fetch(
        "SELECT tenant, queue_name, count(*) AS n FROM tasks WHERE status = 'pending' "
        "GROUP BY tenant, queue_name"
    )
    return {(r["tenant"], r["queue_name"]): r["n"] for r in rows}


# P-BP-2: as sqlite_history.QUEUE_DEPTH (tasks_claim_handler, then the scheduled rows only),
# each part stopping at the limit.
QUEUE_DEPTH = (
    "SELECT (SELECT count(*) FROM (SELECT 1 FROM tasks WHERE tenant = $3 AND queue_name = $1 "
    "AND status = 'pending' LIMIT $2) p) + (SELECT count(*) FROM (SELECT 1 FROM tasks "
    "WHERE status = 'scheduled' AND tenant = $3 AND queue_name = $1 LIMIT $2) s)"
)


async def queue_depth(conn: asyncpg.Connection, tenant: str, queue_name: str, limit: int) -> int:
    """Pending + scheduled tasks of the tenant's queue, up to `limit` each (P-BP-2, P-TEN-3)."""
    return int(await conn.fetchval(QUEUE_DEPTH, queue_name, limit, tenant))


async def add_queue_minutes(
    conn: asyncpg.Connection,
    counts: Sequence[QueueMinuteCounts],
    minute: int,
    depths: dict[tuple[str, str], int],
    prune_before: int,
) -> None:
    """Add `counts`, set the depth of `minute`, drop the minutes before `prune_before`:
    one transaction."""
    async with conn.transaction():
        if counts:
            await conn.executemany(
                _ADD,
                [
                    (
                        c["queue_name"],
                        c["minute"],
                        c["enqueued"],
                        c["completed"],
                        c["failed"],
                        c["wait_hist"],
                        c["tenant"],
                    )
                    for c in counts
                ],
            )
        if depths:
            await conn.executemany(
                _DEPTH, [(t, q, minute, n) for (t, q), n in sorted(depths.items())]
            )
        await conn.execute("DELETE FROM queue_minutes WHERE minute < $1", prune_before)


async def queue_minutes(
    conn: asyncpg.Connection, tenant: str, queue_name: str, since: int
) -> list[QueueMinuteRow]:
    """The stored minutes of the tenant's `queue_name` from `since` on, oldest first."""
    rows = await conn.fetch(
        "SELECT minute, enqueued, completed, failed, depth, wait_hist FROM queue_minutes "
        "WHERE tenant = $3 AND queue_name = $1 AND minute >= $2 ORDER BY minute",
        queue_name,
        since,
        tenant,
    )
    return cast("list[QueueMinuteRow]", [dict(r) for r in rows])


async def list_tenants(conn: asyncpg.Connection) -> list[TenantRow]:
    """P-TEN-4: every tenant with a task or a worker, with both counts, in tenant order."""
    rows = await conn.fetch(
        "SELECT tenant, sum(tasks)::bigint AS tasks, sum(workers)::bigint AS workers FROM ("
        "SELECT tenant, count(*) AS tasks, 0 AS workers FROM tasks GROUP BY tenant "
        "UNION ALL SELECT tenant, 0, count(*) FROM workers GROUP BY tenant) c "
        "GROUP BY tenant ORDER BY tenant"
    )
    return [{"tenant": r[0], "tasks": int(r[1]), "workers": int(r[2])} for r in rows]


# The stored statuses of the four partial indexes that together hold every task, each
# leading with tenant (schema 14): tasks_waiting_seq, tasks_running_queue,
# tasks_completed_seq, tasks_ended_seq.
STATUS_INDEXES = (
    ("pending", "held", "scheduled"),
    ("running",),
    ("completed",),
    ("failed", "cancelled", "expired"),
)


# P-TEN-4: the distinct tenants of the tasks table as a skip scan (as sqlite_history), one
# index probe per tenant in each of STATUS_INDEXES, so a scrape stays cheap however many
# rows a tenant has. least() skips the NULL of an index with no tenant past the last one.
def _next_tenant(after: str) -> str:
    probes = (
        f"(SELECT min(tenant) FROM tasks WHERE status IN ({', '.join(map(repr, group))}){after})"
        for group in STATUS_INDEXES
    )
    return f"least({', '.join(probes)})"


TENANT_NAMES = (
    f"WITH RECURSIVE t(tenant) AS (SELECT {_next_tenant('')} UNION ALL "
    f"SELECT {_next_tenant(' AND tenant > t.tenant')} FROM t WHERE t.tenant IS NOT NULL) "
    "SELECT tenant FROM t WHERE tenant IS NOT NULL UNION SELECT tenant FROM workers"
)


async def tenant_names(conn: asyncpg.Connection) -> list[str]:
    """Every tenant with a task or a worker, sorted (P-TEN-4)."""
    return sorted(r[0] for r in await conn.fetch(TENANT_NAMES))
