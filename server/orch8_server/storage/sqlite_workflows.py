"""Workflow rows on SQLite: sequences, instances and instance events (P-WF-1..10).

The `WorkflowStore` of one transaction (`SqliteTx.workflows`): every statement runs after
the transaction's buffered writes, on the single connection, so the lifecycle reads,
decides and writes an instance atomically with the tasks it dispatches.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, cast

from orch8_server.storage.rows import (
    INSTANCE_COLUMNS,
    InstanceEventRow,
    InstanceRow,
    NewInstanceRow,
    SequenceRow,
)
from orch8_server.storage.sqlite_rows import decode, dumps

_INSTANCE_JSON = frozenset(("input", "output", "error", "state"))
_SELECT_INSTANCE = "SELECT " + ", ".join(INSTANCE_COLUMNS) + " FROM instances"
_INSERT_INSTANCE = (
    f"INSERT INTO instances ({', '.join(INSTANCE_COLUMNS[1:])}) "  # all but seq
    f"VALUES ({', '.join('?' * (len(INSTANCE_COLUMNS) - 1))})"
)
_SEQUENCE_COLUMNS = ("tenant", "name", "version", "definition", "created_at")
_SEQUENCE_JSON = frozenset(("definition",))
_SELECT_SEQUENCE = "SELECT " + ", ".join(_SEQUENCE_COLUMNS) + " FROM sequences"
_EVENT_COLUMNS = ("id", "tenant", "instance_id", "task_id", "step_id", "run")


def _instance(raw: tuple[Any, ...] | None) -> InstanceRow | None:
    if raw is None:
        return None
    row: InstanceRow = decode(INSTANCE_COLUMNS, _INSTANCE_JSON, raw)
    return row


def _stored(row: NewInstanceRow) -> list[Any]:
    """The values of _INSERT_INSTANCE: every column but seq, JSON ones as text."""
    values: dict[str, Any] = {**row}
    return [dumps(values[c]) if c in _INSTANCE_JSON else values[c] for c in INSTANCE_COLUMNS[1:]]


def _sequence(raw: tuple[Any, ...] | None) -> SequenceRow | None:
    if raw is None:
        return None
    row: SequenceRow = decode(_SEQUENCE_COLUMNS, _SEQUENCE_JSON, raw)
    return row


def _events(rows: list[Any]) -> list[InstanceEventRow]:
    events = [dict(zip(_EVENT_COLUMNS, r, strict=True)) for r in rows]
    return cast("list[InstanceEventRow]", sorted(events, key=lambda e: e["id"]))


_UPDATE_INSTANCE = (
    "UPDATE instances SET status = ?, output = ?, error = ?, state = ?, "
    "updated_at = ?, finished_at = ? WHERE id = ?"
)


class SqliteWorkflows:
    """The workflow tables in one transaction; `ready` flushes its buffered writes and
    returns the connection."""

    def __init__(self, ready: Callable[[], sqlite3.Connection], write: Callable[..., None]) -> None:
        self._ready = ready
        self._write = write  # SqliteTx._write: buffered until the next read or the commit
        self.updated: set[str] = set()

    async def lock_sequence_name(self, tenant: str, name: str) -> None:
        """The single connection already serialises definers: no version race."""

    async def sequence(self, tenant: str, name: str, version: int | None) -> SequenceRow | None:
        c = self._ready()
        if version is None:
            sql = _SELECT_SEQUENCE + " WHERE tenant = ? AND name = ? ORDER BY version DESC LIMIT 1"
            return _sequence(c.execute(sql, (tenant, name)).fetchone())
        sql = _SELECT_SEQUENCE + " WHERE tenant = ? AND name = ? AND version = ?"
        return _sequence(c.execute(sql, (tenant, name, version)).fetchone())

    async def insert_sequence(self, row: SequenceRow) -> None:
        self._ready().execute(
            "INSERT INTO sequences (tenant, name, version, definition, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (row["tenant"], row["name"], row["version"], dumps(row["definition"]),
             row["created_at"]),
        )  # fmt: skip

    async def list_sequences(self, tenant: str, limit: int, after: str | None) -> list[SequenceRow]:
        sql = (
            _SELECT_SEQUENCE + " s WHERE tenant = ? AND name > ? AND version = "
            "(SELECT max(version) FROM sequences m WHERE m.tenant = s.tenant AND m.name = s.name)"
            " ORDER BY name LIMIT ?"
        )
        rows = self._ready().execute(sql, (tenant, after or "", limit)).fetchall()
        return [r for r in (_sequence(raw) for raw in rows) if r is not None]

    async def add_instance(self, row: NewInstanceRow) -> None:
        # Buffered with the transaction's other writes, so a batch start (P-WF-14) stores
        # its instances in one executemany, as PostgreSQL does in one statement.
        self._write(("i", row["id"]), _INSERT_INSTANCE, _stored(row))

    async def insert_instance(self, row: NewInstanceRow) -> tuple[InstanceRow, bool]:
        c = self._ready()
        key = row["idempotency_key"]
        if key is not None:
            existing = _instance(
                c.execute(
                    _SELECT_INSTANCE + " WHERE tenant = ? AND idempotency_key = ?",
                    (row["tenant"], key),
                ).fetchone()
            )
            if existing is not None:
                return existing, False
        cur = c.execute(_INSERT_INSTANCE, _stored(row))
        return {**row, "seq": cur.lastrowid or 0}, True

    async def instance(self, instance_id: str) -> InstanceRow | None:
        c = self._ready()
        return _instance(c.execute(_SELECT_INSTANCE + " WHERE id = ?", (instance_id,)).fetchone())

    async def instances(self, instance_ids: list[str]) -> dict[str, InstanceRow]:
        c, marks = self._ready(), ", ".join("?" * len(instance_ids))
        rows = c.execute(_SELECT_INSTANCE + f" WHERE id IN ({marks})", instance_ids).fetchall()
        return {r["id"]: r for r in (_instance(raw) for raw in rows) if r is not None}

    async def update_instance(self, row: InstanceRow) -> None:
        """Buffered (an advance of many instances is one executemany) and encoded at the
        flush: after the keyed step inserts, whose `adopt` may change the state (P-WF-4)."""
        self.updated.add(row["id"])

        def params() -> tuple[Any, ...]:
            return (row["status"], dumps(row["output"]), dumps(row["error"]), dumps(row["state"]),
                    row["updated_at"], row["finished_at"], row["id"])  # fmt: skip

        self._write(("i", row["id"]), _UPDATE_INSTANCE, params)

    async def lock_instance_key(self, tenant: str, key: str) -> None:
        self._ready()  # the single writer serialises every key

    async def instance_slots(self, tenant: str, key: str, before_seq: int) -> tuple[int, int]:
        running, ahead = self._ready().execute(
            "SELECT count(*) FILTER (WHERE status = 'running'), "
            "count(*) FILTER (WHERE status = 'held' AND seq < ?) FROM instances "
            "WHERE tenant = ? AND concurrency_key = ? AND status IN ('running', 'held')",
            (before_seq, tenant, key),
        ).fetchone()  # fmt: skip
        return int(running), int(ahead)

    async def held_instances(self, tenant: str, key: str, limit: int) -> list[InstanceRow]:
        rows = self._ready().execute(
            _SELECT_INSTANCE + " WHERE tenant = ? AND concurrency_key = ? AND status = 'held' "
            "ORDER BY seq LIMIT ?",
            (tenant, key, limit),
        ).fetchall()  # fmt: skip
        return [r for r in (_instance(raw) for raw in rows) if r is not None]

    async def list_instances(
        self,
        tenant: str,
        sequence: str | None,
        statuses: tuple[str, ...],
        limit: int,
        before_seq: int | None,
    ) -> list[InstanceRow]:
        where: list[str] = ["tenant = ?"]  # P-TEN-3
        args: list[Any] = [tenant]
        if sequence is not None:
            where.append("sequence = ?")
            args.append(sequence)
        if statuses:
            where.append(f"status IN ({','.join('?' * len(statuses))})")
            args += statuses
        if before_seq is not None:
            where.append("seq < ?")
            args.append(before_seq)
        sql = _SELECT_INSTANCE + " WHERE " + " AND ".join(where) + " ORDER BY seq DESC LIMIT ?"
        rows = self._ready().execute(sql, [*args, limit]).fetchall()
        return [r for r in (_instance(raw) for raw in rows) if r is not None]

    async def add_timer(
        self, tenant: str, instance_id: str, step_id: str, run: int, fire_at: int
    ) -> None:
        self._ready().execute(
            "INSERT INTO instance_events (tenant, instance_id, step_id, run, fire_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (tenant, instance_id, step_id, run, fire_at),
        )

    async def take_due_events(self, now: int, limit: int) -> list[InstanceEventRow]:
        return _events(
            self._ready()
            .execute(
                "DELETE FROM instance_events WHERE id IN (SELECT id FROM instance_events "
                "WHERE fire_at <= ? ORDER BY id LIMIT ?) "
                "RETURNING " + ", ".join(_EVENT_COLUMNS),
                (now, limit),
            )
            .fetchall()
        )

    async def take_task_events(self, task_ids: list[str]) -> list[InstanceEventRow]:
        """Expiry's events of these tasks (or a schema v5 trigger's)."""
        return _events(
            self._ready()
            .execute(
                f"DELETE FROM instance_events WHERE task_id IN ({','.join('?' * len(task_ids))}) "
                "RETURNING " + ", ".join(_EVENT_COLUMNS),
                task_ids,
            )
            .fetchall()
        )
