"""SQLite claims (Tx.claim of base.py), on the storage's single connection.

One writer: a claim is a SELECT of candidates in claim order (P-ORDER-1) and an
executemany that leases them, with nothing interleaving. Controls are read from their
tables only when the engine says the queue or a handler may be capped
(`capped`, P-CTRL-1/2); the engine's view is exact here, since this process makes every
change. Labels filter the candidates (P-LABEL-1/2). Claimed rows carry the columns the
wire needs (CLAIM_COLUMNS), their JSON as `orjson.Fragment`s: stored text, never parsed.
"""

from __future__ import annotations

import heapq
import itertools
import sqlite3
from typing import Any

import orjson

from orch8_server.storage.base import ClaimParams
from orch8_server.storage.claim_budget import pending_handlers_sql, split_candidates
from orch8_server.storage.rows import CLAIM_COLUMNS, CLAIM_JSON, ClaimedRow
from orch8_server.storage.sqlite_rows import dumps

_CLAIM_SELECT = "SELECT " + ", ".join(CLAIM_COLUMNS) + " FROM tasks"
_LEASE = (
    "UPDATE tasks SET status = 'running', attempt = ?, lease_id = ?, lease_expires_at = ?, "
    "lease_ms = ?, lease_started_at = ?, worker_id = ?, updated_at = ?, started_at = ? "
    "WHERE seq = ?"
)
# P-WF-5: a step task that expires records its instance event in the expiring
# transaction (the pump advances the instance); `{where}` picks the rows about to expire.
EXPIRY_EVENTS = (
    "INSERT INTO instance_events (tenant, instance_id, task_id, fire_at) "
    "SELECT tenant, json_extract(context, '$.instance_id'), id, 0 FROM tasks WHERE {where} "
    "AND json_extract(context, '$.step_id') IS NOT NULL "
    "AND json_extract(context, '$.instance_id') IS NOT NULL"
)
_EXPIRY_EVENTS_SEQ = EXPIRY_EVENTS.format(where="seq = ?")
# P-LABEL-1: a poll without a registered worker's labels takes unlabelled tasks only; a
# worker's poll takes a task when its labels ($labels, JSON) hold every required pair.
_UNLABELLED = " AND required_labels IS NULL"
_LABELS_HELD = (
    " AND (required_labels IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(required_labels) r "
    "WHERE NOT EXISTS (SELECT 1 FROM json_each(?) w WHERE w.key = r.key AND w.value = r.value)))"
)


def _claimed(raw: tuple[Any, ...]) -> ClaimedRow:
    row: Any = dict(zip(CLAIM_COLUMNS, raw, strict=True))
    row["headers_json"] = row["headers"]  # the stored text, for P-TEL-2 claim spans
    for col in CLAIM_JSON:
        value = row[col]
        if value is not None:
            row[col] = orjson.Fragment(value)
    claimed: ClaimedRow = row  # its lease columns are set by claim()
    return claimed


def _candidates(
    conn: sqlite3.Connection, p: ClaimParams, want: int, held: str | None, excluded: set[str]
) -> list[ClaimedRow]:
    # P-LABEL-1/2: rows this claimer may not take are filtered, never block the rest.
    if held is None:
        match, extra = _UNLABELLED, []
    else:
        match, extra = _LABELS_HELD, [held]
    # A poll that names no handler claims from every handler with pending tasks in the
    # queue (schema 12 has no index over a queue's pending rows of all handlers).
    names = p.handler_names or _pending_handlers(conn, p.tenant, p.queue_name)
    sql = (
        _CLAIM_SELECT + " WHERE status = 'pending' AND tenant = ? AND queue_name = ? "
        "AND handler_name = ?" + match + " ORDER BY priority, seq LIMIT ?"
    )
    scans = [
        conn.execute(sql, (p.tenant, p.queue_name, name, *extra, want))
        for name in names
        if name not in excluded
    ]
    if len(scans) == 1:
        return [_claimed(r) for r in scans[0]]
    # One ordered scan of tasks_claim_handler per handler, merged lazily in claim order
    # (P-ORDER-1): `want` rows read in all, plus at most one per handler.
    merged = itertools.islice(heapq.merge(*scans, key=_claim_order), want)
    rows = [_claimed(r) for r in merged]
    for scan in scans:
        scan.close()
    return rows


_PRIORITY_AT, _SEQ_AT = CLAIM_COLUMNS.index("priority"), CLAIM_COLUMNS.index("seq")


def _claim_order(raw: tuple[Any, ...]) -> tuple[Any, Any]:
    return raw[_PRIORITY_AT], raw[_SEQ_AT]


# schema 12 dropped tasks_claim_any: a poll naming no handler looks its handlers up first
_PENDING_HANDLERS = pending_handlers_sql(tenant="?1", queue="?2")


def _pending_handlers(conn: sqlite3.Connection, tenant: str, queue_name: str) -> list[str]:
    return [name for (name,) in conn.execute(_PENDING_HANDLERS, (tenant, queue_name))]


def _budgets(
    conn: sqlite3.Connection,
    tenant: str,
    queue_name: str,
    handler_names: list[str] | None,
    limit: int,
) -> tuple[int, dict[str, int]]:
    """P-CTRL-1/2 from the stored controls: (how many this claim may take, the room
    left under each capped handler's cap). One writer: nothing changes meanwhile."""
    control = conn.execute(
        "SELECT paused, max_running FROM queue_controls WHERE tenant = ? AND queue_name = ?",
        (tenant, queue_name),
    ).fetchone()
    if control is not None and control[0]:
        return 0, {}
    if control is not None and control[1] is not None:
        running = conn.execute(
            "SELECT COUNT(*) FROM tasks WHERE status = 'running' AND tenant = ? AND queue_name = ?",
            (tenant, queue_name),
        ).fetchone()[0]
        limit = min(limit, control[1] - running)
    caps = dict(
        conn.execute(
            "SELECT handler_name, max_running FROM handler_controls "
            "WHERE tenant = ? AND max_running IS NOT NULL",
            (tenant,),
        ).fetchall()
    )
    if handler_names:
        caps = {h: caps[h] for h in handler_names if h in caps}
    if not caps:
        return limit, {}
    marks = ",".join("?" * len(caps))
    running_of = dict(
        conn.execute(
            "SELECT handler_name, COUNT(*) FROM tasks WHERE status = 'running' AND tenant = ? "
            f"AND handler_name IN ({marks}) GROUP BY handler_name",
            [tenant, *caps],
        ).fetchall()
    )
    return limit, {h: cap - running_of.get(h, 0) for h, cap in caps.items()}


def claim(conn: sqlite3.Connection, p: ClaimParams) -> tuple[list[ClaimedRow], int]:
    """Claim up to `p.limit` tasks. Returns the claimed rows and how many expired on the
    way."""
    held = None if p.labels is None else dumps(p.labels)  # P-LABEL-1: matched as JSON
    limit, now = p.limit, p.now
    room: dict[str, int] = {}
    if p.capped:
        limit, room = _budgets(conn, p.tenant, p.queue_name, p.handler_names, limit)
    excluded = {h for h, left in room.items() if left <= 0}
    claimed: list[ClaimedRow] = []
    expired = 0
    expires_at = now + p.lease_ms
    worker_id, lease_ms, new_lease_id = p.worker_id, p.lease_ms, p.new_lease_id
    while len(claimed) < limit:
        want = limit - len(claimed)
        candidates = _candidates(conn, p, want, held, excluded)
        if not candidates:
            break
        # P-EXPIRE-1, P-CTRL-2: drop stale rows, spend the handlers' budgets
        fresh, stale, capped_out = split_candidates(candidates, now, room, excluded)
        if stale:  # P-EXPIRE-1: never delivered, even when the claim races the deadline
            conn.executemany(_EXPIRY_EVENTS_SEQ, [(r["seq"],) for r in stale])  # P-WF-5
            conn.executemany(
                "UPDATE tasks SET status = 'expired', finished_at = ?, updated_at = ? "
                "WHERE seq = ?",
                [(now, now, r["seq"]) for r in stale],
            )
            expired += len(stale)
        updates = []
        for row in fresh:
            attempt, lease = row["attempt"] + 1, new_lease_id()
            started = row["started_at"] if row["started_at"] is not None else now
            row["status"], row["attempt"], row["lease_id"] = "running", attempt, lease
            row["lease_expires_at"], row["lease_ms"] = expires_at, lease_ms
            row["lease_started_at"], row["worker_id"], row["started_at"] = now, worker_id, started
            updates.append(
                (attempt, lease, expires_at, lease_ms, now, worker_id, now, started, row["seq"])
            )
        conn.executemany(_LEASE, updates)
        claimed += fresh
        if len(candidates) < want and not capped_out:
            break
    return claimed, expired
