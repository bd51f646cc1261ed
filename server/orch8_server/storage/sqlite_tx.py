"""One SQLite transaction (the `Tx` of base.py) on the storage's single connection.

Writes that return nothing (update_task, insert_attempt, inserts without an idempotency
key) are buffered per statement and run as `executemany` before the next read and at
commit, as the PostgreSQL transaction does: a batch complete of 100 tasks is two C-level
loops instead of 200 statements driven from Python. Rows this transaction read are kept
(and updated by update_task), so rule code re-reading them costs nothing.

Claims: sqlite_claim.py.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Callable
from functools import cached_property
from typing import Any, cast

from orch8_server.storage import sqlite_claim, sqlite_keys
from orch8_server.storage.base import ClaimParams
from orch8_server.storage.rate_buckets import Admitted
from orch8_server.storage.rows import (
    ATTEMPT_COLUMNS,
    COMPLETED_COLUMNS,
    INSERT_COLUMNS,
    WORKER_COLUMNS,
    AttemptRow,
    ClaimedRow,
    CompletedRow,
    NewTaskRow,
    TaskRow,
    TaskUpdate,
    WorkerRow,
    WorkerUpdate,
    born_fields,
)
from orch8_server.storage.sqlite_rows import (
    ATTEMPT_JSON,
    ATTEMPT_SELECT,
    TASK_JSON,
    TASK_SELECT,
    WORKER_JSON,
    WORKER_SELECT,
    attempt,
    dumps,
    task,
    worker,
)
from orch8_server.storage.sqlite_workflows import SqliteWorkflows

_NEW_TASK = tuple((c, c in TASK_JSON) for c in INSERT_COLUMNS)
_NEW_JSON = tuple(js for _, js in _NEW_TASK)
_new_values = operator.itemgetter(*INSERT_COLUMNS)  # a new task's INSERT arguments, in C
_INSERT_TASK = (
    f"INSERT INTO tasks ({', '.join(c for c, _ in _NEW_TASK)}) "
    f"VALUES ({', '.join('?' * len(_NEW_TASK))})"
)
_INSERT_TASK_IF_NEW = (
    _INSERT_TASK + " ON CONFLICT (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL"
    " DO NOTHING"
)
_ID_AT, _TENANT_AT, _KEY_AT = (
    [c for c, _ in _NEW_TASK].index(c) for c in ("id", "tenant", "idempotency_key")
)
_KEYED = "keyed insert"  # SqliteTx._written_by's name for a row in SqliteTx._keyed
_UPSERT_ATTEMPT = (
    f"INSERT OR REPLACE INTO attempts ({', '.join(ATTEMPT_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(ATTEMPT_COLUMNS))})"
)
_update_sql: dict[tuple[str, ...], str] = {}  # column set -> UPDATE text, built once each
_complete_sql: dict[int, str] = {}  # batch size -> set-based completion, built once each


def _complete_statement(n: int) -> str:
    sql = _complete_sql.get(n)
    if sql is None:
        values = ", ".join(["(?, ?, ?)"] * n)
        sql = _complete_sql[n] = (
            f"WITH c(id, lease_id, output) AS (VALUES {values}) "
            "UPDATE tasks SET status = 'completed', output = c.output, finished_at = ?, "
            "updated_at = ? FROM c WHERE tasks.id = c.id AND tasks.lease_id = c.lease_id "
            # Unary + keeps these two terms out of index selection: each item is one probe
            # of the unique index on id. Left indexable, statistics from `PRAGMA optimize`
            # (run at close) can make SQLite scan every running task of the tenant per item
            # through tasks_status_seq or tasks_running_queue (as PostgreSQL did, postgres_tx).
            "AND +tasks.status = 'running' AND +tasks.tenant = ? RETURNING "
            + ", ".join(f"tasks.{col}" for col in COMPLETED_COLUMNS)
            + ", json_extract(tasks.context, '$.instance_id')"  # P-WF-5: advance inline
        )
    return sql


_COMPLETED_KEYS = (*COMPLETED_COLUMNS, "instance_id")


def _encoded(fields: TaskUpdate | WorkerUpdate, json_cols: frozenset[str]) -> list[Any]:
    return [dumps(v) if k in json_cols else v for k, v in fields.items()]


class SqliteTx:
    """One transaction on the shared connection (see SqliteStorage.transaction)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.c = conn
        self._rows: dict[str, TaskRow | None] = {}  # task id -> row as this tx left it
        self._writes: dict[str, list[Any]] = {}  # statement -> parameter rows, in order
        self._written_by: dict[tuple[Any, ...], str] = {}  # row key -> statement that wrote it
        # Keyed inserts a caller lets wait (insert_task's `adopt`), sent first at the flush.
        self._keyed: list[tuple[list[Any], Callable[[TaskRow], None]]] = []
        self.touched: set[tuple[str, str]] = set()
        self.touched_rate: set[tuple[str, str]] = set()

    def _write(self, key: tuple[Any, ...], sql: str, params: Any) -> None:
        """Buffer one row of `sql`. `params` may be a function giving them at the flush,
        after the keyed inserts' `adopt` ran (an instance update whose state it changes);
        a statement's rows are all one or all the other (one call site each)."""
        if self._written_by.get(key, sql) != sql:
            self.flush()  # the same row written by another statement: keep the order
        self._written_by[key] = sql
        self._writes.setdefault(sql, []).append(params)

    @cached_property
    def workflows(self) -> SqliteWorkflows:
        return SqliteWorkflows(self.ready, self._write)

    def ready(self) -> sqlite3.Connection:
        """The connection, once this transaction's buffered writes ran (before a read)."""
        self.flush()
        return self.c

    def flush(self) -> None:
        """Run buffered writes (before any read, and at commit)."""
        if not self._writes and not self._keyed:
            return
        writes, self._writes, self._written_by = self._writes, {}, {}
        if self._keyed:  # after the new tasks (one may hold a key), before the instance
            plain = writes.pop(_INSERT_TASK, None)  # updates an adopted row changes
            if plain is not None:
                self._run(_INSERT_TASK, plain)
            self._send_keyed()
        for sql, rows in writes.items():
            self._run(sql, [r() for r in rows] if callable(rows[0]) else rows)

    def _run(self, sql: str, rows: list[Any]) -> None:
        if len(rows) == 1:
            self.c.execute(sql, rows[0])
        else:
            self.c.executemany(sql, rows)

    def _send_keyed(self) -> None:
        """The waiting keyed inserts as one executemany; each row whose key was stored
        already (P-TASK-3, P-TEN-3: per tenant) goes to its caller's `adopt`."""
        keyed, self._keyed = self._keyed, []
        if self.c.executemany(_INSERT_TASK_IF_NEW, [v for v, _ in keyed]).rowcount == len(keyed):
            return  # every key was new: the usual case, one C-level loop
        for values, adopt in keyed:
            existing = self.c.execute(
                TASK_SELECT + " WHERE tenant = ? AND idempotency_key = ?",
                (values[_TENANT_AT], values[_KEY_AT]),
            ).fetchone()
            if existing is not None and existing[1] != values[_ID_AT]:
                adopt(task(existing))

    async def insert_task(
        self,
        row: NewTaskRow,
        new_key: bool = False,
        adopt: Callable[[TaskRow], None] | None = None,
    ) -> tuple[NewTaskRow, bool]:
        out = await self._insert_task(row, new_key, adopt)
        born = born_fields(row)
        if born is not None:  # by id: a row not stored (its key was known) is not touched
            await self.update_task(row["id"], cast(TaskUpdate, born))
        return out

    async def _insert_task(
        self, row: NewTaskRow, new_key: bool, adopt: Callable[[TaskRow], None] | None
    ) -> tuple[NewTaskRow, bool]:
        values = [dumps(v) if js else v for v, js in zip(_new_values(row), _NEW_JSON, strict=True)]
        key = row["idempotency_key"]
        if key is None or new_key:
            # No conflict is possible: buffer it; its seq is known after the flush only,
            # and nothing needs it before (the list cursor reads seq from the table).
            self._write(("t", row["id"]), _INSERT_TASK, values)
            return row, True
        if adopt is not None:  # sent at the next flush, with the other waiting ones
            if self._written_by.get(("t", row["id"]), _KEYED) != _KEYED:
                self.flush()
            self._written_by[("t", row["id"])] = _KEYED
            self._keyed.append((values, adopt))
            return row, True
        self.flush()  # a key buffered earlier in this transaction must be seen
        if self.c.execute(_INSERT_TASK_IF_NEW, values).rowcount == 1:
            return row, True  # the usual case costs one statement, not a look first
        existing = self.c.execute(  # P-TEN-3: idempotency keys are per tenant
            TASK_SELECT + " WHERE tenant = ? AND idempotency_key = ?", (row["tenant"], key)
        ).fetchone()
        return task(existing), False  # P-TASK-3

    async def get_task(self, task_id: str) -> TaskRow | None:
        if task_id not in self._rows:
            await self.tasks_by_ids([task_id])
        row = self._rows[task_id]
        return None if row is None else row.copy()

    async def tasks_by_ids(self, task_ids: list[str]) -> list[TaskRow]:
        missing = [t for t in dict.fromkeys(task_ids) if t not in self._rows]
        if missing:
            self.flush()
            marks = ",".join("?" * len(missing))
            self._rows.update(dict.fromkeys(missing))
            for raw in self.c.execute(TASK_SELECT + f" WHERE id IN ({marks})", missing):
                self._rows[raw[1]] = task(raw)
        found = (self._rows[t] for t in dict.fromkeys(task_ids))
        return [row.copy() for row in found if row is not None]

    async def update_task(self, task_id: str, fields: TaskUpdate) -> None:
        row = self._rows.get(task_id)
        if row is not None:
            row.update(fields)  # type: ignore[typeddict-item]  # TaskUpdate keys are TaskRow's
        cols = tuple(fields)
        sql = _update_sql.get(cols)
        if sql is None:
            sets = ", ".join(f"{k} = ?" for k in cols)
            sql = _update_sql[cols] = f"UPDATE tasks SET {sets} WHERE id = ?"
        self._write(("t", task_id), sql, [*_encoded(fields, TASK_JSON), task_id])

    async def insert_attempt(self, row: AttemptRow) -> None:
        values = [dumps(row.get(c)) if c in ATTEMPT_JSON else row.get(c) for c in ATTEMPT_COLUMNS]
        self._write(("a", row["task_id"], row["lease_id"]), _UPSERT_ATTEMPT, values)

    async def complete_running(
        self, tenant: str, items: list[tuple[str, str, Any]], now: int
    ) -> list[CompletedRow]:
        if not items:
            return []
        self.flush()
        self._rows.clear()  # rows written below bypass update_task
        params: list[Any] = []
        for task_id, lease_id, output in items:
            params += (task_id, lease_id, dumps(output))
        rows = self.c.execute(
            _complete_statement(len(items)), [*params, now, now, tenant]
        ).fetchall()
        # P-DONE-1: the completed row is its attempt's record (transitions.completed_attempt)
        return cast(
            "list[CompletedRow]", [dict(zip(_COMPLETED_KEYS, r, strict=True)) for r in rows]
        )

    async def get_attempt(self, task_id: str, lease_id: str) -> AttemptRow | None:
        self.flush()
        raw = self.c.execute(
            ATTEMPT_SELECT + " WHERE task_id = ? AND lease_id = ?", (task_id, lease_id)
        ).fetchone()
        return None if raw is None else attempt(raw)

    async def latest_attempt(self, task_id: str) -> AttemptRow | None:
        self.flush()
        raw = self.c.execute(
            ATTEMPT_SELECT + " WHERE task_id = ? ORDER BY ended_at DESC, attempt DESC LIMIT 1",
            (task_id,),
        ).fetchone()
        return None if raw is None else attempt(raw)

    async def claim(self, params: ClaimParams) -> tuple[list[ClaimedRow], int]:
        self.flush()
        self._rows.clear()  # rows written below bypass update_task
        return sqlite_claim.claim(self.c, params)

    async def promote_due(self, now: int) -> list[tuple[str, str, str]]:
        self.flush()
        self._rows.clear()
        # P-KEY-3, P-RATE-3: a keyed task that falls due queues for a slot or a token
        rows = self.c.execute(
            "UPDATE tasks SET status = CASE WHEN concurrency_key IS NULL "
            "AND rate_limit_key IS NULL THEN 'pending' ELSE 'held' END, updated_at = ? "
            "WHERE status = 'scheduled' AND run_at <= ? "
            "RETURNING tenant, queue_name, handler_name, concurrency_key, rate_limit_key",
            (now, now),
        ).fetchall()
        self.touched.update((t, k) for t, _, _, k, _ in rows if k is not None)
        self.touched_rate.update((t, r) for t, _, _, _, r in rows if r is not None)
        # P-RATE-3: rate limits whose next token came
        self.touched_rate.update(
            self.c.execute(
                "UPDATE rate_limits SET next_at = NULL WHERE next_at <= ? RETURNING tenant, key",
                (now,),
            ).fetchall()
        )
        return sorted({(t, q, h) for t, q, h, k, r in rows if k is None and r is None})

    async def expire_overdue(self, now: int) -> int:
        self.flush()
        self._rows.clear()
        due = (
            "good_until IS NOT NULL AND status IN ('pending', 'scheduled', 'held') "
            "AND good_until <= ?"
        )
        self.c.execute(sqlite_claim.EXPIRY_EVENTS.format(where=due), (now,))  # P-WF-5
        rows = self.c.execute(
            f"UPDATE tasks SET status = 'expired', finished_at = ?, updated_at = ? WHERE {due} "
            "RETURNING tenant, concurrency_key, rate_limit_key",
            (now, now, now),
        ).fetchall()
        self.touched.update((t, k) for t, k, _ in rows if k is not None)  # P-KEY-3
        self.touched_rate.update((t, r) for t, _, r in rows if r is not None)  # P-RATE-2
        return len(rows)

    async def admit(self, keys: set[tuple[str, str]], now: int) -> list[tuple[str, str, str]]:
        self.flush()
        self._rows.clear()  # rows written below bypass update_task
        return sqlite_keys.admit(self.c, keys | self.touched, now)

    async def stranded_keys(self, limit: int) -> list[tuple[str, str]]:
        self.flush()
        return sqlite_keys.stranded(self.c, limit)

    async def paced_keys(self, limit: int) -> list[tuple[str, str]]:
        self.flush()
        return self.c.execute(sqlite_keys.PACED, (limit,)).fetchall()

    async def admit_rate(self, keys: set[tuple[str, str]], now: int) -> Admitted:
        self.flush()
        self._rows.clear()  # rows written below bypass update_task
        return sqlite_keys.admit_rate(self.c, keys | self.touched_rate, now)

    async def set_rate_limit(
        self, tenant: str, key: str, limit: int, period_ms: int, burst: int, now: int
    ) -> None:
        self.flush()
        self.c.execute(  # P-RATE-4: a new limit starts full; a changed one keeps its tokens
            "INSERT INTO rate_limits (tenant, key, lim, period_ms, burst, tokens, refilled_at, "
            "next_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, NULL, ?6) "
            "ON CONFLICT (tenant, key) DO UPDATE SET lim = ?3, period_ms = ?4, burst = ?5, "
            "tokens = min(tokens, ?5), updated_at = ?6",
            (tenant, key, limit, period_ms, burst, now),
        )
        self.touched_rate.add((tenant, key))

    async def delete_rate_limit(self, tenant: str, key: str) -> bool:
        self.flush()
        gone = self.c.execute(
            "DELETE FROM rate_limits WHERE tenant = ? AND key = ?", (tenant, key)
        ).rowcount
        self.touched_rate.add((tenant, key))  # P-RATE-4: its held tasks go at once
        return gone == 1

    async def expired_leases(self, now: int, limit: int) -> list[TaskRow]:
        # lease_expires_at is not indexed (schema 10: a heartbeat writes no index); the
        # running rows come from the partial tasks_running_queue and are sorted here
        self.flush()
        return [
            task(r)
            for r in self.c.execute(
                TASK_SELECT + " WHERE status = 'running' AND lease_expires_at <= ? "
                "ORDER BY lease_expires_at LIMIT ?",
                (now, limit),
            )
        ]

    async def running_tasks_of(self, tenant: str, worker_id: str) -> list[TaskRow]:
        self.flush()
        return [
            task(r)
            for r in self.c.execute(
                TASK_SELECT + " WHERE tenant = ? AND worker_id = ? AND status = 'running'",
                (tenant, worker_id),
            )
        ]

    async def get_worker(self, tenant: str, worker_id: str) -> WorkerRow | None:
        self.flush()
        raw = self.c.execute(
            WORKER_SELECT + " WHERE tenant = ? AND worker_id = ?", (tenant, worker_id)
        ).fetchone()
        return None if raw is None else worker(raw)

    async def upsert_worker(self, row: WorkerRow) -> None:
        self.flush()
        self.c.execute(
            f"INSERT OR REPLACE INTO workers ({', '.join(WORKER_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(WORKER_COLUMNS))})",
            [dumps(row.get(c)) if c in WORKER_JSON else row.get(c) for c in WORKER_COLUMNS],
        )

    async def update_worker(self, tenant: str, worker_id: str, fields: WorkerUpdate) -> None:
        self.flush()
        sets = ", ".join(f"{k} = ?" for k in fields)
        self.c.execute(
            f"UPDATE workers SET {sets} WHERE tenant = ? AND worker_id = ?",
            [*_encoded(fields, WORKER_JSON), tenant, worker_id],
        )

    async def delete_worker(self, tenant: str, worker_id: str) -> None:
        self.flush()
        self.c.execute(
            "DELETE FROM workers WHERE tenant = ? AND worker_id = ?", (tenant, worker_id)
        )

    async def silent_workers(self, before: int) -> list[WorkerRow]:
        self.flush()
        return [
            worker(r)
            for r in self.c.execute(
                WORKER_SELECT + " WHERE state IN ('running', 'quiet', 'terminating') "
                "AND last_heartbeat_at < ?",
                (before,),
            )
        ]
