"""PostgreSQL claims: the one-statement claim of every plain poll, and the serialised
claim of a paused or capped queue or handler (P-CTRL-1, P-CTRL-2).

Plain claims (no control known to this replica) are one FOR UPDATE SKIP LOCKED statement
that still skips rows of any paused or capped queue or handler: the controls live in the
database, and a replica whose cached view is stale (a NOTIFY still in flight) must not
pass them. The guard is an index probe of two tables that are empty unless controls are
in use. Label routing (P-LABEL-1) is a filter of the same scan: a plain poll takes only
rows whose required_labels is NULL; a registered worker's poll also takes rows whose
labels its own contain (jsonb <@), so labelled rows never block the rest (P-LABEL-2).

Capped claims run in a transaction that locks the control rows (queue first, then
handlers by name), counts the running tasks (tasks_running_queue) and claims at most
cap - running: racing pollers on every replica queue on the lock, never past the cap.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import asyncpg
import orjson

from orch8_server.storage.base import ClaimParams
from orch8_server.storage.claim_budget import pending_handlers_sql, split_candidates
from orch8_server.storage.rows import CLAIM_COLUMNS, CLAIM_JSON, ClaimedRow

# A claimed row is live unless its good_until passed: those expire instead (P-EXPIRE-1).
_LIVE = "(t.good_until IS NULL OR t.good_until > $3)"


def expiry_events(rows: str, where: str = "TRUE") -> str:
    """P-WF-5: the instance events of the workflow steps among `rows` (a CTE of expired
    rows with tenant, id and context), due at once, for the pump: no result path reaches
    an expiry, so the expiring statement records them (schema 16 dropped the trigger)."""
    return (
        "INSERT INTO instance_events (tenant, instance_id, task_id, fire_at) "
        f"SELECT x.tenant, x.context::json->>'instance_id', x.id, 0 FROM {rows} x "
        f"WHERE {where} AND (x.context::json->>'step_id') IS NOT NULL "
        "AND (x.context::json->>'instance_id') IS NOT NULL"
    )


_LEASE_COLUMNS = (
    "status",
    "lease_id",
    "worker_id",
    "lease_expires_at",
    "lease_ms",
    "lease_started_at",
)
# Only what the wire and the claim need; JSON as its stored text (spliced, P-LEASE-8
# rows are never parsed here).
_RETURNED = ", ".join(
    f"t.{c}::text AS {c}" if c in CLAIM_JSON else f"t.{c}"
    for c in (*CLAIM_COLUMNS, *_LEASE_COLUMNS)
)


# P-CTRL-1/2 guard of a plain claim: nothing of a paused or capped queue or handler of
# the claiming tenant ({t}: the tenant's parameter).
def _queue_free(t: str) -> str:
    return (
        f"NOT EXISTS (SELECT 1 FROM queue_controls qc WHERE qc.tenant = {t} "
        "AND qc.queue_name = $1 AND (qc.paused OR qc.max_running IS NOT NULL))"
    )


def _handler_free(column: str, t: str) -> str:
    return (
        f"NOT EXISTS (SELECT 1 FROM handler_controls hc WHERE hc.tenant = {t} "
        f"AND hc.handler_name = {column} AND hc.max_running IS NOT NULL)"
    )


def _labels(param: str | None) -> str:
    """P-LABEL-1: unlabelled rows only, or rows whose labels the claimer holds."""
    if param is None:
        return "t.required_labels IS NULL"
    return f"(t.required_labels IS NULL OR t.required_labels <@ {param}::jsonb)"


@cache
def claim_sql(labelled: bool) -> str:
    """One statement per poll: pick up to $2 pending rows in claim order (priority, then
    FIFO by seq; P-ORDER-1) with FOR UPDATE SKIP LOCKED, lease them, return them.

    One LATERAL index scan per handler ($7: the poll's handler names, or for a poll that
    names none the queue's handlers with pending tasks, `pending_handlers`) on
    tasks_claim_handler (queue, handler, priority, seq), each reading at most $2 rows in
    index order; the best $2 of their union win (the losers stay locked until this
    one-statement transaction commits). The worker's labels are the next parameter, the
    tenant the last (P-TEN-3: it leads every claim index)."""
    labels = _labels("$8" if labelled else None)
    t = f"${8 + labelled}"
    pick = (
        "SELECT c.id, c.seq, c.priority FROM unnest($7::text[]) AS h(name), LATERAL ("
        f"SELECT id, seq, priority FROM tasks t WHERE status = 'pending' AND tenant = {t} "
        "AND queue_name = $1 "
        f"AND handler_name = h.name AND {labels} AND {_handler_free('h.name', t)} "
        f"AND {_queue_free(t)} ORDER BY priority, seq LIMIT $2 "
        "FOR UPDATE SKIP LOCKED) c ORDER BY c.priority, c.seq LIMIT $2"
    )

    def when(then: str, otherwise: str) -> str:
        return f"CASE WHEN {_LIVE} THEN {then} ELSE {otherwise} END"

    running, expired = "'running'", "'expired'"
    expired_row = "x.status = 'expired'"
    return (
        f"WITH pick AS ({pick}), "
        "ranked AS (SELECT id, row_number() OVER (ORDER BY priority, seq) AS rn FROM pick), "
        "moved AS (UPDATE tasks t SET "
        f"status = {when(running, expired)}, "
        f"attempt = {when('t.attempt + 1', 't.attempt')}, "
        f"lease_id = {when('($6::text[])[r.rn]', 't.lease_id')}, "
        f"lease_expires_at = {when('$3 + $4', 't.lease_expires_at')}, "
        f"lease_ms = {when('$4', 't.lease_ms')}, "
        f"lease_started_at = {when('$3', 't.lease_started_at')}, "
        f"worker_id = {when('$5', 't.worker_id')}, "
        f"started_at = {when('COALESCE(t.started_at, $3)', 't.started_at')}, "
        f"finished_at = {when('t.finished_at', '$3')}, "
        "updated_at = $3 "
        f"FROM ranked r WHERE t.id = r.id RETURNING {_RETURNED}), "
        f"ended AS ({expiry_events('moved', expired_row)}) "
        "SELECT * FROM moved"
    )


# schema 18 dropped tasks_claim_any: a poll naming no handler looks its handlers up first
PENDING_HANDLERS = pending_handlers_sql(tenant="$2", queue="$1")


async def pending_handlers(conn: asyncpg.Connection, tenant: str, queue_name: str) -> list[str]:
    return [r[0] for r in await conn.fetch(PENDING_HANDLERS, queue_name, tenant)]


def _claimed(record: asyncpg.Record) -> ClaimedRow:
    row: Any = dict(record)
    row["headers_json"] = row["headers"]  # the stored text, for P-TEL-2 claim spans
    for col in CLAIM_JSON:
        value = row[col]
        if value is not None:
            row[col] = orjson.Fragment(value)
    claimed: ClaimedRow = row
    return claimed


async def claim_rows(conn: asyncpg.Connection, p: ClaimParams) -> tuple[list[ClaimedRow], int]:
    """The plain claim's statements (Tx.claim in base.py). Each is atomic by itself, so
    they also run in autocommit (PgStorage.claim). P-LEASE-8: a claim need not wait for
    its WAL flush; lost in a crash, the task is still pending and is delivered again
    (at-least-once) while enqueues and results stay fully durable."""
    claimed: list[ClaimedRow] = []
    expired = 0
    names = p.handler_names or await pending_handlers(conn, p.tenant, p.queue_name)
    if not names:
        return claimed, expired
    sql = claim_sql(p.labels is not None)
    while len(claimed) < p.limit:
        want = p.limit - len(claimed)
        args: list[Any] = [p.queue_name, want, p.now, p.lease_ms, p.worker_id]
        args.append([p.new_lease_id() for _ in range(want)])
        args.append(names)
        if p.labels is not None:
            args.append(p.labels)
        args.append(p.tenant)
        rows = [_claimed(r) for r in await conn.fetch(sql, *args)]
        fresh = sorted(
            (r for r in rows if r["status"] == "running"),
            key=lambda r: (r["priority"], r["seq"]),
        )
        claimed += fresh
        expired += len(rows) - len(fresh)
        if len(fresh) == len(rows):  # nothing expired on the way: no need to look again
            break
    return claimed, expired


# Capped claims (P-CTRL-2) ----------------------------------------------------------------

_LEASE_PICKED = (
    "UPDATE tasks t SET status = 'running', attempt = t.attempt + 1, lease_id = u.lease, "
    "lease_expires_at = $2::bigint + $3::bigint, lease_ms = $3, lease_started_at = $2, "
    "worker_id = $4::text, started_at = COALESCE(t.started_at, $2), updated_at = $2 "
    "FROM unnest($1::text[], $5::text[]) AS u(id, lease) WHERE t.id = u.id "
    f"RETURNING {_RETURNED}"
)
_EXPIRE_PICKED = (
    "WITH expired AS (UPDATE tasks SET status = 'expired', finished_at = $2::bigint, "
    "updated_at = $2 WHERE id = ANY($1::text[]) RETURNING tenant, id, context) "
    + expiry_events("expired")
)


@cache
def _pick_sql(labelled: bool) -> str:
    """Candidates of a capped claim, locked, in claim order: $1 queue, $2 how many,
    $3 the handlers, $4 labels, then the tenant."""
    labels = _labels("$4" if labelled else None)
    t = f"${4 + labelled}"
    cols = "t.id, t.seq, t.priority, t.handler_name, t.good_until"
    return (
        "SELECT c.* FROM unnest($3::text[]) AS h(name), LATERAL ("
        f"SELECT {cols} FROM tasks t WHERE status = 'pending' AND tenant = {t} "
        "AND queue_name = $1 "
        f"AND handler_name = h.name AND {labels} ORDER BY priority, seq LIMIT $2 "
        "FOR UPDATE SKIP LOCKED) c ORDER BY c.priority, c.seq LIMIT $2"
    )


async def _budgets(
    conn: asyncpg.Connection,
    tenant: str,
    queue_name: str,
    handler_names: list[str] | None,
    limit: int,
) -> tuple[int, dict[str, int]]:
    """Lock the controls (queue row, then handler rows by name: one order everywhere, no
    deadlock) and return (how many this claim may take, room under each handler cap)."""
    control = await conn.fetchrow(
        "SELECT paused, max_running FROM queue_controls WHERE queue_name = $1 AND tenant = $2 "
        "FOR UPDATE",
        queue_name,
        tenant,
    )
    if control is not None and control["paused"]:  # P-CTRL-1
        return 0, {}
    if control is not None and control["max_running"] is not None:
        running = await conn.fetchval(
            "SELECT count(*) FROM tasks WHERE status = 'running' AND tenant = $2 "
            "AND queue_name = $1",
            queue_name,
            tenant,
        )
        limit = min(limit, control["max_running"] - running)
    caps = {
        r[0]: r[1]
        for r in await conn.fetch(
            "SELECT handler_name, max_running FROM handler_controls WHERE max_running IS NOT NULL "
            "AND tenant = $2 AND ($1::text[] IS NULL OR handler_name = ANY($1::text[])) "
            "ORDER BY handler_name FOR UPDATE",
            handler_names or None,
            tenant,
        )
    }
    if not caps or limit <= 0:
        return limit, {}
    running_of = {
        r[0]: r[1]
        for r in await conn.fetch(
            "SELECT handler_name, count(*) FROM tasks WHERE status = 'running' AND tenant = $2 "
            "AND handler_name = ANY($1::text[]) GROUP BY handler_name",
            list(caps),
            tenant,
        )
    }
    return limit, {h: cap - running_of.get(h, 0) for h, cap in caps.items()}


async def capped_claim_rows(
    conn: asyncpg.Connection, p: ClaimParams
) -> tuple[list[ClaimedRow], int]:
    """A claim of a paused or capped queue or handler, in one transaction (P-CTRL-2)."""
    claimed: list[ClaimedRow] = []
    expired = 0
    queue_name, handler_names, labels, now = p.queue_name, p.handler_names, p.labels, p.now
    async with conn.transaction():
        limit, room = await _budgets(conn, p.tenant, queue_name, handler_names, p.limit)
        excluded = {h for h, left in room.items() if left <= 0}
        every = handler_names or await pending_handlers(conn, p.tenant, queue_name)
        while len(claimed) < limit:
            want = limit - len(claimed)
            names = [h for h in every if h not in excluded]
            if not names:
                break
            args: list[Any] = [queue_name, want, names]
            if labels is not None:
                args.append(labels)
            args.append(p.tenant)
            candidates = await conn.fetch(_pick_sql(labels is not None), *args)
            if not candidates:
                break
            # P-EXPIRE-1, P-CTRL-2: drop stale rows, spend the handlers' budgets
            take, stale, capped_out = split_candidates(candidates, now, room, excluded)
            if stale:
                await conn.execute(_EXPIRE_PICKED, [r["id"] for r in stale], now)
                expired += len(stale)
            if take:
                ids = [r["id"] for r in take]
                leases = [p.new_lease_id() for _ in take]
                rows = await conn.fetch(_LEASE_PICKED, ids, now, p.lease_ms, p.worker_id, leases)
                claimed += sorted(
                    (_claimed(r) for r in rows), key=lambda r: (r["priority"], r["seq"])
                )
            if len(candidates) < want and not capped_out:
                break
    return claimed, expired
