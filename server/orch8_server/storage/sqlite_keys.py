"""Concurrency keys and rate limits on SQLite (P-KEY-1..6, P-RATE-1..5): admission of held
tasks to their key's slots or their rate limit's tokens.

One writer: nothing changes between counting and admitting, so counts are exact without
a lock. The token arithmetic is rate_buckets.py's, shared with PostgreSQL.
"""

from __future__ import annotations

import sqlite3

from orch8_server.storage import rate_buckets
from orch8_server.storage.rate_buckets import Admitted

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
            "WHERE status = 'held' AND concurrency_key IS NOT NULL) WHERE NOT EXISTS (SELECT 1 FROM tasks o "
            "WHERE o.tenant = t AND o.concurrency_key = k AND o.status IN ('pending', 'running')) "
            "LIMIT ?",
            (limit,),
        )
    ]


_RATE_HELD = (
    "SELECT seq, queue_name, handler_name FROM tasks WHERE tenant = ? AND rate_limit_key = ? "
    "AND status = 'held' ORDER BY priority, seq LIMIT ?"
)
_RATE_READY = (
    "SELECT COUNT(*) FROM (SELECT 1 FROM tasks WHERE tenant = ? AND rate_limit_key = ? "
    "AND status = 'pending' LIMIT ?)"
)
# Rate keys with held tasks (tasks_rate_held), for the safety net's look (reaper.py).
PACED = (
    "SELECT DISTINCT tenant, rate_limit_key FROM tasks WHERE status = 'held' "
    "AND rate_limit_key IS NOT NULL LIMIT ?"
)
RATE_COLUMNS = "lim, period_ms, burst, tokens, refilled_at, ready, next_at, updated_at"


def admit_rate(conn: sqlite3.Connection, keys: set[tuple[str, str]], now: int) -> Admitted:
    out = Admitted()
    for tenant, key in sorted(keys):
        limit = conn.execute(
            f"SELECT {RATE_COLUMNS} FROM rate_limits WHERE tenant = ? AND key = ?", (tenant, key)
        ).fetchone()
        if limit is None:  # P-RATE-4: no limit, no pace
            rows = conn.execute(_RATE_HELD, (tenant, key, -1)).fetchall()
        else:
            bucket = rate_buckets.Bucket(*limit[:6])
            ready = conn.execute(_RATE_READY, (tenant, key, bucket.burst)).fetchone()[0]
            want = bucket.room(now, ready)
            rows = conn.execute(_RATE_HELD, (tenant, key, want + 1)).fetchall() if want else []
            more = len(rows) > want or (not want and _has_held(conn, tenant, key))
            rows = rows[:want]
            next_at = bucket.take(len(rows), now, more)
            conn.execute(
                "UPDATE rate_limits SET tokens = ?, refilled_at = ?, ready = ?, next_at = ? "
                "WHERE tenant = ? AND key = ?",
                (bucket.tokens, now, bucket.ready, next_at, tenant, key),
            )
            out.arm(next_at)
        conn.executemany(_ADMIT, [(now, seq) for seq, _, _ in rows])
        out.labels += [(tenant, q, h) for _, q, h in rows]
    return out


def _has_held(conn: sqlite3.Connection, tenant: str, key: str) -> bool:
    return conn.execute(_RATE_HELD, (tenant, key, 1)).fetchone() is not None
