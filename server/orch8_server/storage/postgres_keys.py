"""Concurrency keys and rate limits on PostgreSQL (P-KEY-1..6, P-RATE-1..5): admission of
held tasks to their key's slots or their rate limit's tokens, serialised per key across
replicas (a rate limit on its row's lock; the token arithmetic is rate_buckets.py's).

Each key's admission takes a transaction-level advisory lock on the key first, then counts
the key's slot holders in a new statement (READ COMMITTED: it sees every admission that
committed before the lock was granted) and admits held tasks in claim order while slots
are free. Every change that can fill a slot (admission) runs under that lock; changes that
free one (completion, failure, cancel, expiry) are followed by an admission of their key
in the same transaction, which waits for the lock, so the count never overshoots and no
freed slot stays empty.

Held rows are taken FOR UPDATE SKIP LOCKED: a held row locked by another transaction is
being changed there (cancelled, expired) by a transaction that admits its key itself
afterwards. Waiting for it instead could deadlock (that transaction waits for our lock).
"""

from __future__ import annotations

from typing import Any

import asyncpg

from orch8_server.storage import rate_buckets
from orch8_server.storage.postgres_bulk import NEW_TASK_COLS
from orch8_server.storage.rate_buckets import Admitted

SLOTS = (
    "SELECT count(*) FROM tasks WHERE tenant = $1 AND concurrency_key = $2 "
    "AND status IN ('pending', 'running')"
)
# Schema 10's orch8_admit: every key's lock, count and admission in one round trip. Its
# lock is a transaction-level advisory lock in the two-int space (4932953, "KEY"), which
# does not overlap the one-bigint space of the migration lock (MIGRATION_LOCK).
_ADMIT = "SELECT a_tenant, a_queue, a_handler FROM orch8_admit($1::text[], $2::text[], $3)"
# Each key with held tasks once (a loose scan of tasks_held), then one probe of its slots.
_STRANDED = (
    "WITH RECURSIVE k AS ("
    "(SELECT tenant, concurrency_key FROM tasks WHERE status = 'held' "
    "AND concurrency_key IS NOT NULL ORDER BY tenant, concurrency_key LIMIT 1) "
    "UNION ALL SELECT n.tenant, n.concurrency_key FROM k, LATERAL ("
    "SELECT tenant, concurrency_key FROM tasks WHERE status = 'held' "
    "AND concurrency_key IS NOT NULL AND (tenant, concurrency_key) > (k.tenant, k.concurrency_key) "
    "ORDER BY tenant, concurrency_key LIMIT 1) n) "
    "SELECT tenant, concurrency_key FROM k WHERE NOT EXISTS (SELECT 1 FROM tasks o "
    "WHERE o.tenant = k.tenant AND o.concurrency_key = k.concurrency_key "
    "AND o.status IN ('pending', 'running')) LIMIT $1"
)


_ROOM = "SELECT r_tenant, r_key, r_room FROM orch8_room($1::text[], $2::text[], $3::integer[])"
_S, _K, _C, _P, _T, _Q, _H = (
    NEW_TASK_COLS.index(c)
    for c in ("status", "concurrency_key", "max_concurrency", "priority", "tenant",
              "queue_name", "handler_name")
)  # fmt: skip


async def seat(conn: asyncpg.Connection, rows: list[tuple[Any, ...]]) -> list[tuple[str, str, str]]:
    """New keyed tasks not yet sent (buffered INSERT argument tuples, changed in place) take
    the free slots of keys without held tasks as `pending`, in claim order: one row version
    where held-then-admitted wrote two. The keys stay locked to the end of the transaction,
    so the INSERT that follows is counted by every later admission. Returns their (tenant,
    queue, handler) triples, to wake their polls."""
    held = [i for i, r in enumerate(rows) if r[_S] == "held" and r[_K] is not None]
    if not held:
        return []
    caps: dict[tuple[str, str], int] = {}
    for i in held:
        caps.setdefault((rows[i][_T], rows[i][_K]), rows[i][_C])
    ordered = sorted(caps)
    room = {
        (r[0], r[1]): r[2]
        for r in await conn.fetch(
            _ROOM, [t for t, _ in ordered], [k for _, k in ordered], [caps[k] for k in ordered]
        )
    }
    seated = []
    for i in sorted(held, key=lambda i: (rows[i][_P], i)):  # P-ORDER-1 among the new
        key = (rows[i][_T], rows[i][_K])
        if room.get(key, 0) > 0:
            room[key] -= 1
            rows[i] = (*rows[i][:_S], "pending", *rows[i][_S + 1 :])
            seated.append((rows[i][_T], rows[i][_Q], rows[i][_H]))
    return seated


async def admit(
    conn: asyncpg.Connection, keys: set[tuple[str, str]], now: int
) -> list[tuple[str, str, str]]:
    """In the caller's transaction (the keys' advisory locks last until it ends)."""
    ordered = sorted(keys)  # one lock order: no deadlock between admissions
    rows = await conn.fetch(_ADMIT, [t for t, _ in ordered], [k for _, k in ordered], now)
    return [(r[0], r[1], r[2]) for r in rows]


async def stranded(conn: asyncpg.Connection, limit: int) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in await conn.fetch(_STRANDED, limit)]


# Rate keys with held tasks (tasks_rate_held), for the safety net's look (reaper.py).
PACED = (
    "SELECT DISTINCT tenant, rate_limit_key FROM tasks WHERE status = 'held' "
    "AND rate_limit_key IS NOT NULL LIMIT $1"
)
RATE_COLUMNS = "lim, period_ms, burst, tokens, refilled_at, ready, next_at, updated_at"
_RATE_ROW = f"SELECT {RATE_COLUMNS} FROM rate_limits WHERE tenant = $1 AND key = $2 FOR UPDATE"
_RATE_READY = (
    "SELECT count(*) FROM (SELECT 1 FROM tasks WHERE tenant = $1 AND rate_limit_key = $2 "
    "AND status = 'pending' LIMIT $3) r"
)
# The head of the key's held tasks in claim order; SKIP LOCKED as in _ADMIT.
_RATE_ADMIT = (
    "UPDATE tasks t SET status = 'pending', updated_at = $4 FROM (SELECT id FROM tasks "
    "WHERE tenant = $1 AND rate_limit_key = $2 AND status = 'held' ORDER BY priority, seq "
    "LIMIT $3 FOR UPDATE SKIP LOCKED) h WHERE t.id = h.id "
    "RETURNING t.tenant, t.queue_name, t.handler_name"
)
_RATE_MORE = (
    "SELECT EXISTS (SELECT 1 FROM tasks WHERE tenant = $1 AND rate_limit_key = $2 "
    "AND status = 'held')"
)


async def admit_rate(conn: asyncpg.Connection, keys: set[tuple[str, str]], now: int) -> Admitted:
    """In the caller's transaction: each limit's row stays locked until it ends."""
    out = Admitted()
    for tenant, key in sorted(keys):
        limit = await conn.fetchrow(_RATE_ROW, tenant, key)
        if limit is None:  # P-RATE-4: no limit, no pace
            rows = await conn.fetch(_RATE_ADMIT, tenant, key, None, now)
        else:
            bucket = rate_buckets.Bucket(*list(limit.values())[:6])
            ready = await conn.fetchval(_RATE_READY, tenant, key, bucket.burst)
            want = bucket.room(now, ready)
            rows = await conn.fetch(_RATE_ADMIT, tenant, key, want, now) if want else []
            more = await conn.fetchval(_RATE_MORE, tenant, key)
            next_at = bucket.take(len(rows), now, more)
            await conn.execute(
                "UPDATE rate_limits SET tokens = $3, refilled_at = $4, ready = $5, next_at = $6 "
                "WHERE tenant = $1 AND key = $2",
                tenant, key, bucket.tokens, now, bucket.ready, next_at,
            )  # fmt: skip
            out.arm(next_at)
        out.labels += [(r[0], r[1], r[2]) for r in rows]
    return out
