"""SQLite statements of queue controls and label routing (P-CTRL-1..3, P-LABEL-1..3).

Functions over the storage's single connection, called from SqliteStorage inside its
transaction or after a settled read. One process owns the file, so nothing is announced:
the engine's own view of the controls is the whole truth.
"""

from __future__ import annotations

import sqlite3
from typing import Any, cast

import orjson

from orch8_server.storage.rows import (
    HANDLER_CONTROL_COLUMNS,
    QUEUE_CONTROL_COLUMNS,
    HandlerControlRow,
    QueueControlRow,
    QueueControlUpdate,
)

_QUEUE_SELECT = "SELECT " + ", ".join(QUEUE_CONTROL_COLUMNS) + " FROM queue_controls"
_HANDLER_SELECT = "SELECT " + ", ".join(HANDLER_CONTROL_COLUMNS) + " FROM handler_controls"


def _queue_row(raw: tuple[Any, ...]) -> QueueControlRow:
    row: Any = dict(zip(QUEUE_CONTROL_COLUMNS, raw, strict=True))
    row["paused"] = bool(row["paused"])
    control: QueueControlRow = row
    return control


def set_queue_control(
    conn: sqlite3.Connection, tenant: str, queue_name: str, fields: QueueControlUpdate, now: int
) -> QueueControlRow:
    cols = list(fields)
    conn.execute(
        f"INSERT INTO queue_controls (tenant, queue_name, {', '.join(cols)}, updated_at) "
        f"VALUES (?, ?, {', '.join('?' * len(cols))}, ?) "
        "ON CONFLICT (tenant, queue_name) DO UPDATE SET "
        + ", ".join(f"{c} = excluded.{c}" for c in [*cols, "updated_at"]),
        (tenant, queue_name, *fields.values(), now),
    )
    return _queue_row(
        conn.execute(
            _QUEUE_SELECT + " WHERE tenant = ? AND queue_name = ?", (tenant, queue_name)
        ).fetchone()
    )


def set_handler_control(
    conn: sqlite3.Connection, tenant: str, handler_name: str, max_running: int | None, now: int
) -> HandlerControlRow:
    conn.execute(
        "INSERT INTO handler_controls (tenant, handler_name, max_running, updated_at) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (tenant, handler_name) DO UPDATE SET "
        "max_running = excluded.max_running, updated_at = excluded.updated_at",
        (tenant, handler_name, max_running, now),
    )
    return {
        "handler_name": handler_name, "max_running": max_running, "updated_at": now,
        "tenant": tenant,
    }  # fmt: skip


def controls(conn: sqlite3.Connection) -> tuple[list[QueueControlRow], list[HandlerControlRow]]:
    queues = [_queue_row(r) for r in conn.execute(_QUEUE_SELECT + " ORDER BY tenant, queue_name")]
    handlers = cast(
        "list[HandlerControlRow]",
        [
            dict(zip(HANDLER_CONTROL_COLUMNS, r, strict=True))
            for r in conn.execute(_HANDLER_SELECT + " ORDER BY tenant, handler_name")
        ],
    )
    return queues, handlers


def running_counts(conn: sqlite3.Connection) -> list[tuple[str, str, str, int]]:
    """(tenant, queue, handler, running tasks) of every tenant."""
    return conn.execute(
        "SELECT tenant, queue_name, handler_name, COUNT(*) FROM tasks WHERE status = 'running' "
        "GROUP BY tenant, queue_name, handler_name"
    ).fetchall()


def pending_label_sets(
    conn: sqlite3.Connection, tenant: str, queue_name: str | None
) -> list[tuple[str, str, dict[str, str], int]]:
    q, args = " AND tenant = ?", [tenant]
    if queue_name is not None:
        q, args = q + " AND queue_name = ?", [tenant, queue_name]
    return [
        (queue, handler, orjson.loads(labels), n)
        for queue, handler, labels, n in conn.execute(
            "SELECT queue_name, handler_name, required_labels, COUNT(*) FROM tasks "
            "WHERE status = 'pending' AND required_labels IS NOT NULL"
            + q
            + " GROUP BY queue_name, handler_name, required_labels",
            args,
        )
    ]


def live_worker_labels(conn: sqlite3.Connection, tenant: str) -> list[dict[str, str]]:
    """P-LABEL-3 per tenant: another tenant's workers never make a task routable."""
    return [
        orjson.loads(labels)
        for (labels,) in conn.execute(
            "SELECT labels FROM workers WHERE tenant = ? AND state <> 'dead'", (tenant,)
        )
    ]
