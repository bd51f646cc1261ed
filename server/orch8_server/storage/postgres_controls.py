"""PostgreSQL statements of queue controls and label routing (P-CTRL-1..3, P-LABEL-1..3).

A control change commits together with a NOTIFY on the wake channel (handler
CONTROLS_CHANGED), so every other replica re-reads the controls and wakes its polls of
the queue (a resume wakes them at once, P-CTRL-1). The claim itself re-checks the stored
controls (postgres_claim.py), so a replica that has not heard yet never passes them.
"""

from __future__ import annotations

from typing import cast

import asyncpg

from orch8_server.storage.base import ANY_QUEUE, CONTROLS_CHANGED, wake_key
from orch8_server.storage.postgres_listen import CHANNEL
from orch8_server.storage.rows import (
    HANDLER_CONTROL_COLUMNS,
    QUEUE_CONTROL_COLUMNS,
    HandlerControlRow,
    QueueControlRow,
    QueueControlUpdate,
)

_NOTIFY = f"SELECT pg_notify('{CHANNEL}', json_build_array($1::text, $2::text, $3::text)::text)"


async def notify(conn: asyncpg.Connection, replica: str, queue_name: str, handler: str) -> None:
    await conn.execute(_NOTIFY, replica, queue_name, handler)


async def set_queue_control(
    conn: asyncpg.Connection,
    replica: str,
    tenant: str,
    queue_name: str,
    fields: QueueControlUpdate,
    now: int,
) -> QueueControlRow:
    cols = list(fields)
    marks = ", ".join(f"${i + 3}" for i in range(len(cols)))
    at = f"${len(cols) + 3}"
    async with conn.transaction():
        row = await conn.fetchrow(
            f"INSERT INTO queue_controls (tenant, queue_name, {', '.join(cols)}, updated_at) "
            f"VALUES ($1, $2, {marks}, {at}) ON CONFLICT (tenant, queue_name) DO UPDATE SET "
            + ", ".join(f"{c} = EXCLUDED.{c}" for c in [*cols, "updated_at"])
            + " RETURNING "
            + ", ".join(QUEUE_CONTROL_COLUMNS),
            tenant,
            queue_name,
            *fields.values(),
            now,
        )
        await notify(conn, replica, wake_key(tenant, queue_name), CONTROLS_CHANGED)
    return cast(QueueControlRow, dict(row))


async def set_handler_control(
    conn: asyncpg.Connection,
    replica: str,
    tenant: str,
    handler_name: str,
    max_running: int | None,
    now: int,
) -> HandlerControlRow:
    async with conn.transaction():
        row = await conn.fetchrow(
            "INSERT INTO handler_controls (tenant, handler_name, max_running, updated_at) "
            "VALUES ($1, $2, $3, $4) ON CONFLICT (tenant, handler_name) DO UPDATE SET "
            "max_running = EXCLUDED.max_running, updated_at = EXCLUDED.updated_at RETURNING "
            + ", ".join(HANDLER_CONTROL_COLUMNS),
            tenant,
            handler_name,
            max_running,
            now,
        )
        await notify(conn, replica, wake_key(tenant, ANY_QUEUE), CONTROLS_CHANGED)
    return cast(HandlerControlRow, dict(row))


async def controls(
    conn: asyncpg.Connection,
) -> tuple[list[QueueControlRow], list[HandlerControlRow]]:
    queues = await conn.fetch(
        "SELECT "
        + ", ".join(QUEUE_CONTROL_COLUMNS)
        + " FROM queue_controls ORDER BY tenant, queue_name"
    )
    handlers = await conn.fetch(
        "SELECT "
        + ", ".join(HANDLER_CONTROL_COLUMNS)
        + " FROM handler_controls ORDER BY tenant, handler_name"
    )
    return (
        cast("list[QueueControlRow]", [dict(r) for r in queues]),
        cast("list[HandlerControlRow]", [dict(r) for r in handlers]),
    )


async def running_counts(conn: asyncpg.Connection) -> list[tuple[str, str, str, int]]:
    """(tenant, queue, handler, running tasks) of every tenant."""
    rows = await conn.fetch(
        "SELECT tenant, queue_name, handler_name, count(*) FROM tasks WHERE status = 'running' "
        "GROUP BY tenant, queue_name, handler_name"
    )
    return [(r[0], r[1], r[2], r[3]) for r in rows]


async def pending_label_sets(
    conn: asyncpg.Connection, tenant: str, queue_name: str | None
) -> list[tuple[str, str, dict[str, str], int]]:
    rows = await conn.fetch(
        "SELECT queue_name, handler_name, required_labels, count(*) FROM tasks "
        "WHERE status = 'pending' AND required_labels IS NOT NULL AND tenant = $2 "
        "AND ($1::text IS NULL OR queue_name = $1) "
        "GROUP BY queue_name, handler_name, required_labels",
        queue_name,
        tenant,
    )
    return [(r[0], r[1], r[2], r[3]) for r in rows]


async def live_worker_labels(conn: asyncpg.Connection, tenant: str) -> list[dict[str, str]]:
    """P-LABEL-3 per tenant: another tenant's workers never make a task routable."""
    rows = await conn.fetch(
        "SELECT labels FROM workers WHERE tenant = $1 AND state <> 'dead'", tenant
    )
    return [r[0] for r in rows]
