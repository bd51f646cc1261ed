"""Concurrency keys on SQLite (P-KEY-1..6): admission of held tasks to their key's slots.

One writer: nothing changes between counting a key's slot holders and admitting its held
tasks, so the count is exact without a lock.
"""

from __future__ import annotations

import sqlite3

_SLOTS = (
    "SELECT COUNT(*) FROM tasks WHERE tenant = ? AND concurrency_key = ? "
    "AND status IN ('pending', 'running')"
)
# The head of a key's queue, in claim order (P-ORDER-1); tasks_held serves it.
_HELD = (
    "SELECT seq, max_concurrency, queue_name, handler_name FROM tasks "
    "WHERE tenant = ? AND concurrency_key = ? AND status = 'held' "
    "ORDER BY priority, seq LIMIT ?"
)
_ADMIT = "UPDATE tasks SET status = 'pending', updated_at = ? WHERE seq = ?"


def slots(conn: sqlite3.Connection, tenant: str, key: str) -> int:
    count: int = conn.execute(_SLOTS, (tenant, key)).fetchone()[0]
    return count


def admit(
    conn: sqlite3.Connection, keys: set[tuple[str, str]], now: int
) -> list[tuple[str, str, str]]:
    admitted: list[tuple[str, str, str]] = []
    for tenant, key in sorted(keys):
        head = conn.execute(_HELD, (tenant, key, 1)).fetchone()
        if head is None:
            continue
        taken = slots(conn, tenant, key)
        if taken >= head[1]:
            continue
        # P-KEY-4: a task is admitted while the holders plus the held tasks ahead of it
        # are fewer than its own limit (one limit per key: the first head[1] - taken).
        rows = conn.execute(_HELD, (tenant, key, head[1] - taken)).fetchall()
        go = [(seq, q, h) for i, (seq, cap, q, h) in enumerate(rows) if taken + i < cap]
        conn.executemany(_ADMIT, [(now, seq) for seq, _, _ in go])
        admitted += [(tenant, q, h) for _, q, h in go]
    return admitted


def stranded(conn: sqlite3.Connection, limit: int) -> list[tuple[str, str]]:
    return [
        (tenant, key)
        for tenant, key in conn.execute(
            # Each key once (a walk of tasks_held), then one probe of tasks_key_slots each.
            "SELECT t, k FROM (SELECT DISTINCT tenant AS t, concurrency_key AS k FROM tasks "
            "WHERE status = 'held') WHERE NOT EXISTS (SELECT 1 FROM tasks o "
            "WHERE o.tenant = t AND o.concurrency_key = k AND o.status IN ('pending', 'running')) "
            "LIMIT ?",
            (limit,),
        )
    ]
