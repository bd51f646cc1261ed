"""Concurrency keys on PostgreSQL (P-KEY-1..6): admission of held tasks to their key's
slots, serialised per key across replicas.

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

import asyncpg

# The two-int advisory lock space does not overlap the one-bigint space of the migration
# lock (postgres_schema.MIGRATION_LOCK); 0x4B4559 is "KEY".
_LOCK = "SELECT pg_advisory_xact_lock(4932953, hashtext($1 || chr(31) || $2))"
SLOTS = (
    "SELECT count(*) FROM tasks WHERE tenant = $1 AND concurrency_key = $2 "
    "AND status IN ('pending', 'running')"
)
# P-KEY-4: a task is admitted while the holders plus the held tasks ahead of it are fewer
# than its own limit. The queue's head says how many can go (its limit - holders), so a
# key with 100,000 held tasks reads only that many of them (tasks_held, claim order).
_ADMIT = (
    "WITH n AS (" + SLOTS + "), "
    "head AS (SELECT max_concurrency AS cap FROM tasks WHERE tenant = $1 "
    "AND concurrency_key = $2 AND status = 'held' ORDER BY priority, seq LIMIT 1), "
    "h AS (SELECT id, max_concurrency, row_number() OVER (ORDER BY priority, seq) - 1 AS ahead "
    "FROM (SELECT id, max_concurrency, priority, seq FROM tasks WHERE tenant = $1 "
    "AND concurrency_key = $2 AND status = 'held' ORDER BY priority, seq "
    "LIMIT greatest(0, (SELECT cap FROM head) - (SELECT count FROM n)) "
    "FOR UPDATE SKIP LOCKED) q) "
    "UPDATE tasks t SET status = 'pending', updated_at = $3 FROM h, n "
    "WHERE t.id = h.id AND n.count + h.ahead < h.max_concurrency "
    "RETURNING t.tenant, t.queue_name, t.handler_name"
)
# Each key with held tasks once (a loose scan of tasks_held), then one probe of its slots.
_STRANDED = (
    "WITH RECURSIVE k AS ("
    "(SELECT tenant, concurrency_key FROM tasks WHERE status = 'held' "
    "ORDER BY tenant, concurrency_key LIMIT 1) "
    "UNION ALL SELECT n.tenant, n.concurrency_key FROM k, LATERAL ("
    "SELECT tenant, concurrency_key FROM tasks WHERE status = 'held' "
    "AND (tenant, concurrency_key) > (k.tenant, k.concurrency_key) "
    "ORDER BY tenant, concurrency_key LIMIT 1) n) "
    "SELECT tenant, concurrency_key FROM k WHERE NOT EXISTS (SELECT 1 FROM tasks o "
    "WHERE o.tenant = k.tenant AND o.concurrency_key = k.concurrency_key "
    "AND o.status IN ('pending', 'running')) LIMIT $1"
)


async def admit(
    conn: asyncpg.Connection, keys: set[tuple[str, str]], now: int
) -> list[tuple[str, str, str]]:
    """In the caller's transaction (the advisory lock lasts until it ends)."""
    admitted: list[tuple[str, str, str]] = []
    for tenant, key in sorted(keys):  # one lock order: no deadlock between admissions
        await conn.execute(_LOCK, tenant, key)
        admitted += [(r[0], r[1], r[2]) for r in await conn.fetch(_ADMIT, tenant, key, now)]
    return admitted


async def stranded(conn: asyncpg.Connection, limit: int) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in await conn.fetch(_STRANDED, limit)]
