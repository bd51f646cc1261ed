"""SQLite backend: stdlib sqlite3, WAL, one connection driven from the event loop.

All statements run on the event-loop thread: a single SQLite writer gains nothing from a
thread pool, and every transaction runs under an asyncio lock, so nothing interleaves
inside one. Committed transactions survive a process crash (WAL, synchronous=NORMAL);
synchronous=FULL also survives power loss.

The claim indexes are partial (`WHERE status = 'pending'`) and lead with the claim's
filter and ORDER BY columns, so a claim reads only claimable rows however many finished
rows accumulate.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import orjson

from orch8_server.storage.base import (
    ATTEMPT_COLUMNS,
    TASK_COLUMNS,
    WORKER_COLUMNS,
    Row,
    TaskFilter,
)

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    handler_name TEXT NOT NULL,
    queue_name TEXT NOT NULL,
    status TEXT NOT NULL,
    priority INTEGER NOT NULL,
    params TEXT NOT NULL,
    context TEXT NOT NULL,
    headers TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    retry TEXT NOT NULL,
    run_at INTEGER NOT NULL,
    good_until INTEGER,
    idempotency_key TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    started_at INTEGER,
    finished_at INTEGER,
    worker_id TEXT,
    lease_id TEXT,
    lease_expires_at INTEGER,
    lease_ms INTEGER,
    lease_started_at INTEGER,
    output TEXT,
    error TEXT,
    checkpoint TEXT,
    progress TEXT,
    cancel_reason TEXT
);
CREATE INDEX IF NOT EXISTS tasks_claim_handler
    ON tasks (queue_name, handler_name, priority, seq, run_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS tasks_claim_any
    ON tasks (queue_name, priority, seq) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS tasks_scheduled ON tasks (run_at) WHERE status = 'scheduled';
CREATE INDEX IF NOT EXISTS tasks_leases ON tasks (lease_expires_at) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS tasks_good_until ON tasks (good_until)
    WHERE good_until IS NOT NULL AND status IN ('pending', 'scheduled');
CREATE INDEX IF NOT EXISTS tasks_status_seq ON tasks (status, seq);
CREATE INDEX IF NOT EXISTS tasks_worker_seq ON tasks (worker_id, seq) WHERE worker_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS tasks_idempotency_key
    ON tasks (idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE IF NOT EXISTS attempts (
    task_id TEXT NOT NULL,
    lease_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    worker_id TEXT,
    started_at INTEGER NOT NULL,
    ended_at INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    error TEXT,
    reply TEXT,
    PRIMARY KEY (task_id, lease_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS workers (
    worker_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    directive TEXT NOT NULL,
    hostname TEXT,
    pid INTEGER,
    handlers TEXT NOT NULL,
    queues TEXT NOT NULL,
    concurrency INTEGER,
    labels TEXT NOT NULL,
    sdk TEXT,
    registered_at INTEGER NOT NULL,
    last_heartbeat_at INTEGER NOT NULL
);
"""

_TASK_JSON = ("params", "context", "headers", "retry", "output", "error", "checkpoint", "progress")
_ATTEMPT_JSON = ("error", "reply")
_WORKER_JSON = ("handlers", "queues", "labels")
_TASK_SELECT = "SELECT " + ", ".join(TASK_COLUMNS) + " FROM tasks"
_ATTEMPT_SELECT = "SELECT " + ", ".join(ATTEMPT_COLUMNS) + " FROM attempts"
_WORKER_SELECT = "SELECT " + ", ".join(WORKER_COLUMNS) + " FROM workers"
_loads = orjson.loads


def _dumps(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def _decode(columns: tuple[str, ...], json_cols: tuple[str, ...], raw: tuple[Any, ...]) -> Row:
    row = dict(zip(columns, raw, strict=True))
    for col in json_cols:
        value = row[col]
        if value is not None:
            row[col] = _loads(value)
    return row


def _task(raw: tuple[Any, ...]) -> Row:
    return _decode(TASK_COLUMNS, _TASK_JSON, raw)


def _encode(fields: Row, json_cols: tuple[str, ...]) -> Row:
    return {k: (_dumps(v) if k in json_cols else v) for k, v in fields.items()}


class SqliteTx:
    """One transaction on the shared connection (see SqliteStorage.transaction)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.c = conn
        # Rows read by tasks_by_ids, handed out once by get_task so a batch complete/fail
        # reads each row once (dropped when the row is written).
        self._read: dict[str, Row] = {}

    async def insert_task(self, row: Row) -> tuple[Row, bool]:
        key = row.get("idempotency_key")
        if key is not None:
            existing = self.c.execute(
                _TASK_SELECT + " WHERE idempotency_key = ?", (key,)
            ).fetchone()
            if existing is not None:
                return _task(existing), False  # P-TASK-3
        values = _encode(row, _TASK_JSON)
        cols = [c for c in TASK_COLUMNS if c != "seq"]
        cur = self.c.execute(
            f"INSERT INTO tasks ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            [values.get(c) for c in cols],
        )
        return {**row, "seq": cur.lastrowid}, True

    async def get_task(self, task_id: str) -> Row | None:
        cached = self._read.pop(task_id, None)
        if cached is not None:
            return cached
        raw = self.c.execute(_TASK_SELECT + " WHERE id = ?", (task_id,)).fetchone()
        return None if raw is None else _task(raw)

    async def tasks_by_ids(self, task_ids: list[str]) -> list[Row]:
        if not task_ids:
            return []
        marks = ",".join("?" * len(task_ids))
        rows = [
            _task(r) for r in self.c.execute(_TASK_SELECT + f" WHERE id IN ({marks})", task_ids)
        ]
        self._read.update((row["id"], dict(row)) for row in rows)
        return rows

    async def update_task(self, task_id: str, fields: Row) -> None:
        self._read.pop(task_id, None)
        values = _encode(fields, _TASK_JSON)
        sets = ", ".join(f"{k} = ?" for k in values)
        self.c.execute(f"UPDATE tasks SET {sets} WHERE id = ?", [*values.values(), task_id])

    async def insert_attempt(self, row: Row) -> None:
        values = _encode(row, _ATTEMPT_JSON)
        self.c.execute(
            f"INSERT OR REPLACE INTO attempts ({', '.join(ATTEMPT_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(ATTEMPT_COLUMNS))})",
            [values.get(c) for c in ATTEMPT_COLUMNS],
        )

    async def get_attempt(self, task_id: str, lease_id: str) -> Row | None:
        raw = self.c.execute(
            _ATTEMPT_SELECT + " WHERE task_id = ? AND lease_id = ?", (task_id, lease_id)
        ).fetchone()
        return None if raw is None else _decode(ATTEMPT_COLUMNS, _ATTEMPT_JSON, raw)

    async def latest_attempt(self, task_id: str) -> Row | None:
        raw = self.c.execute(
            _ATTEMPT_SELECT + " WHERE task_id = ? ORDER BY ended_at DESC, attempt DESC LIMIT 1",
            (task_id,),
        ).fetchone()
        return None if raw is None else _decode(ATTEMPT_COLUMNS, _ATTEMPT_JSON, raw)

    async def claim(
        self,
        queue_name: str,
        handler_names: list[str] | None,
        limit: int,
        now: int,
        lease_ms: int,
        worker_id: str | None,
        new_lease_id: Any,
    ) -> tuple[list[Row], int]:
        claimed: list[Row] = []
        expired = 0
        while len(claimed) < limit:
            want = limit - len(claimed)
            if handler_names:
                # One indexed, ordered scan per handler, merged here: each uses
                # tasks_claim_handler and reads at most `want` rows (P-ORDER-1).
                candidates: list[Row] = []
                for name in handler_names:
                    candidates += [
                        _task(r)
                        for r in self.c.execute(
                            _TASK_SELECT + " WHERE status = 'pending' AND queue_name = ? "
                            "AND handler_name = ? ORDER BY priority, seq LIMIT ?",
                            (queue_name, name, want),
                        )
                    ]
                candidates.sort(key=lambda r: (r["priority"], r["seq"]))
                candidates = candidates[:want]
            else:
                candidates = [
                    _task(r)
                    for r in self.c.execute(
                        _TASK_SELECT + " WHERE status = 'pending' AND queue_name = ? "
                        "ORDER BY priority, seq LIMIT ?",
                        (queue_name, want),
                    )
                ]
            if not candidates:
                break
            stale = [
                r for r in candidates if r["good_until"] is not None and r["good_until"] <= now
            ]
            if stale:  # P-EXPIRE-1: never delivered, even when the claim races the deadline
                self.c.executemany(
                    "UPDATE tasks SET status = 'expired', finished_at = ?, updated_at = ? WHERE seq = ?",
                    [(now, now, r["seq"]) for r in stale],
                )
                expired += len(stale)
            stale_seqs = {r["seq"] for r in stale}
            fresh = [r for r in candidates if r["seq"] not in stale_seqs]
            updates = []
            for row in fresh:
                row.update(
                    status="running",
                    attempt=row["attempt"] + 1,
                    lease_id=new_lease_id(),
                    lease_expires_at=now + lease_ms,
                    lease_ms=lease_ms,
                    lease_started_at=now,
                    worker_id=worker_id,
                    updated_at=now,
                    started_at=row["started_at"] if row["started_at"] is not None else now,
                )
                updates.append(
                    (
                        row["attempt"],
                        row["lease_id"],
                        row["lease_expires_at"],
                        lease_ms,
                        now,
                        worker_id,
                        now,
                        row["started_at"],
                        row["seq"],
                    )
                )
            self.c.executemany(
                "UPDATE tasks SET status = 'running', attempt = ?, lease_id = ?, "
                "lease_expires_at = ?, lease_ms = ?, lease_started_at = ?, worker_id = ?, "
                "updated_at = ?, started_at = ? WHERE seq = ?",
                updates,
            )
            claimed += fresh
            if len(candidates) < want:
                break
        return claimed, expired

    async def promote_due(self, now: int) -> list[tuple[str, str]]:
        rows = self.c.execute(
            "UPDATE tasks SET status = 'pending', updated_at = ? "
            "WHERE status = 'scheduled' AND run_at <= ? RETURNING queue_name, handler_name",
            (now, now),
        ).fetchall()
        return sorted(set(rows))

    async def expire_overdue(self, now: int) -> int:
        cur = self.c.execute(
            "UPDATE tasks SET status = 'expired', finished_at = ?, updated_at = ? "
            "WHERE good_until IS NOT NULL AND status IN ('pending', 'scheduled') "
            "AND good_until <= ?",
            (now, now, now),
        )
        return cur.rowcount

    async def expired_leases(self, now: int, limit: int) -> list[Row]:
        return [
            _task(r)
            for r in self.c.execute(
                _TASK_SELECT + " WHERE status = 'running' AND lease_expires_at <= ? "
                "ORDER BY lease_expires_at LIMIT ?",
                (now, limit),
            )
        ]

    async def running_tasks_of(self, worker_id: str) -> list[Row]:
        return [
            _task(r)
            for r in self.c.execute(
                _TASK_SELECT + " WHERE worker_id = ? AND status = 'running'", (worker_id,)
            )
        ]

    async def get_worker(self, worker_id: str) -> Row | None:
        raw = self.c.execute(_WORKER_SELECT + " WHERE worker_id = ?", (worker_id,)).fetchone()
        return None if raw is None else _decode(WORKER_COLUMNS, _WORKER_JSON, raw)

    async def upsert_worker(self, row: Row) -> None:
        values = _encode(row, _WORKER_JSON)
        self.c.execute(
            f"INSERT OR REPLACE INTO workers ({', '.join(WORKER_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(WORKER_COLUMNS))})",
            [values.get(c) for c in WORKER_COLUMNS],
        )

    async def update_worker(self, worker_id: str, fields: Row) -> None:
        values = _encode(fields, _WORKER_JSON)
        sets = ", ".join(f"{k} = ?" for k in values)
        self.c.execute(
            f"UPDATE workers SET {sets} WHERE worker_id = ?", [*values.values(), worker_id]
        )

    async def delete_worker(self, worker_id: str) -> None:
        self.c.execute("DELETE FROM workers WHERE worker_id = ?", (worker_id,))

    async def silent_workers(self, before: int) -> list[Row]:
        return [
            _decode(WORKER_COLUMNS, _WORKER_JSON, r)
            for r in self.c.execute(
                _WORKER_SELECT + " WHERE state IN ('running', 'quiet', 'terminating') "
                "AND last_heartbeat_at < ?",
                (before,),
            )
        ]


class SqliteStorage:
    kind: Literal["sqlite", "postgresql"] = "sqlite"
    multi_replica = False

    def __init__(self, path: str, synchronous: str = "NORMAL") -> None:
        self.path = path
        self.synchronous = synchronous.upper()
        self._conn: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()

    @property
    def c(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("storage is not open")
        return self._conn

    def set_waker(self, wake: Any, wake_all: Any) -> None:
        """One process owns the file: every wake-up is already in-process."""

    async def share_pollers(
        self, seen: list[tuple[str, str, str, int]], since: int
    ) -> list[tuple[str, str, str, int]]:
        return []  # one process: the in-memory registry is the whole truth

    async def open(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("PRAGMA cache_size = -65536")
        conn.execute("PRAGMA temp_store = MEMORY")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise RuntimeError(
                f"{self.path} has schema version {version}; this server knows {SCHEMA_VERSION}"
            )
        conn.executescript(_SCHEMA)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._conn = conn

    async def close(self) -> None:
        if self._conn is not None:
            async with self._lock:
                self._conn.execute("PRAGMA optimize")
                self._conn.close()
                self._conn = None

    async def ping(self) -> None:
        self.c.execute("SELECT 1").fetchone()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteTx]:
        async with self._lock:
            conn = self.c
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield SqliteTx(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    async def get_task(self, task_id: str) -> Row | None:
        raw = self.c.execute(_TASK_SELECT + " WHERE id = ?", (task_id,)).fetchone()
        return None if raw is None else _task(raw)

    async def list_tasks(self, flt: TaskFilter, limit: int, before_seq: int | None) -> list[Row]:
        where: list[str] = []
        args: list[Any] = []
        if flt.statuses:
            where.append(f"status IN ({','.join('?' * len(flt.statuses))})")
            args += flt.statuses
        for col in ("handler_name", "queue_name", "worker_id"):
            if getattr(flt, col) is not None:
                where.append(f"{col} = ?")
                args.append(getattr(flt, col))
        if flt.created_after is not None:
            where.append("created_at > ?")
            args.append(flt.created_after)
        if flt.created_before is not None:
            where.append("created_at < ?")
            args.append(flt.created_before)
        if before_seq is not None:
            where.append("seq < ?")
            args.append(before_seq)
        sql = _TASK_SELECT + (" WHERE " + " AND ".join(where) if where else "")
        return [
            _task(r) for r in self.c.execute(sql + " ORDER BY seq DESC LIMIT ?", [*args, limit])
        ]

    async def list_attempts(self, task_id: str) -> list[Row]:
        return [
            _decode(ATTEMPT_COLUMNS, _ATTEMPT_JSON, r)
            for r in self.c.execute(
                _ATTEMPT_SELECT + " WHERE task_id = ? ORDER BY started_at, attempt", (task_id,)
            )
        ]

    async def queue_stats(self, queue_name: str | None) -> list[Row]:
        q = " AND queue_name = ?" if queue_name is not None else ""
        args = (queue_name,) if queue_name is not None else ()
        stats: dict[tuple[str, str], Row] = {}

        def slot(queue: str, handler: str) -> Row:
            return stats.setdefault(
                (queue, handler),
                {
                    "queue_name": queue,
                    "handler_name": handler,
                    "pending": 0,
                    "scheduled": 0,
                    "running": 0,
                    "failed": 0,
                    "oldest_pending_run_at": None,
                },
            )

        for queue, handler, n, oldest in self.c.execute(
            "SELECT queue_name, handler_name, COUNT(*), MIN(run_at) FROM tasks "
            "WHERE status = 'pending'" + q + " GROUP BY queue_name, handler_name",
            args,
        ):
            s = slot(queue, handler)
            s["pending"], s["oldest_pending_run_at"] = n, oldest
        for status in ("scheduled", "running", "failed"):
            for queue, handler, n in self.c.execute(
                "SELECT queue_name, handler_name, COUNT(*) FROM tasks "
                "WHERE status = ?" + q + " GROUP BY queue_name, handler_name",
                (status, *args),
            ):
                slot(queue, handler)[status] = n
        return list(stats.values())

    async def next_scheduled_at(self) -> int | None:
        earliest: int | None = self.c.execute(
            "SELECT MIN(run_at) FROM tasks WHERE status = 'scheduled'"
        ).fetchone()[0]
        return earliest

    async def get_worker(self, worker_id: str) -> Row | None:
        return await SqliteTx(self.c).get_worker(worker_id)

    async def list_workers(self, state: str | None) -> list[Row]:
        sql, args = _WORKER_SELECT, tuple[str, ...]()
        if state is not None:
            sql, args = sql + " WHERE state = ?", (state,)
        return [
            _decode(WORKER_COLUMNS, _WORKER_JSON, r)
            for r in self.c.execute(sql + " ORDER BY last_heartbeat_at DESC", args)
        ]

    async def active_task_counts(self, worker_ids: list[str]) -> dict[str, int]:
        if not worker_ids:
            return {}
        marks = ",".join("?" * len(worker_ids))
        return dict(
            self.c.execute(
                f"SELECT worker_id, COUNT(*) FROM tasks WHERE status = 'running' "
                f"AND worker_id IN ({marks}) GROUP BY worker_id",
                worker_ids,
            ).fetchall()
        )
