"""Workflow rows on PostgreSQL: sequences, instances and instance events (P-WF-1..10).

The `WorkflowStore` of one transaction (`PgTx.workflows`). Instances are read FOR UPDATE,
so replicas advancing the same instance take turns (P-WF-5); events are taken with
SKIP LOCKED, so replicas share them without waiting on each other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

import asyncpg

from orch8_server.storage.postgres_bulk import (
    INSERT_INSTANCE_PLAIN,
    NEW_INSTANCE_COLS,
    UPDATE_INSTANCE,
)
from orch8_server.storage.rows import (
    INSTANCE_COLUMNS,
    InstanceEventRow,
    InstanceRow,
    NewInstanceRow,
    SequenceRow,
)

_NEW_INSTANCE = INSTANCE_COLUMNS[1:]
_SELECT_INSTANCE = "SELECT " + ", ".join(INSTANCE_COLUMNS) + " FROM instances"
_SELECT_SEQUENCE = "SELECT tenant, name, version, definition, created_at FROM sequences"
_INSERT_INSTANCE = (
    f"INSERT INTO instances ({', '.join(_NEW_INSTANCE)}) VALUES "
    f"({', '.join(f'${i + 1}' for i in range(len(_NEW_INSTANCE)))}) "
    "ON CONFLICT (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL "
    "DO NOTHING RETURNING seq"
)
_EVENT_COLUMNS = "id, tenant, instance_id, task_id, step_id, run"


def _instance(record: Any) -> InstanceRow | None:
    return None if record is None else cast(InstanceRow, dict(record))


def _sequence(record: Any) -> SequenceRow | None:
    return None if record is None else cast(SequenceRow, dict(record))


def _events(records: list[Any]) -> list[InstanceEventRow]:
    return cast("list[InstanceEventRow]", sorted((dict(r) for r in records), key=lambda e: e["id"]))


class PostgresWorkflows:
    """The workflow tables in one transaction; `ready` sends BEGIN and the buffered writes
    and returns the connection."""

    def __init__(
        self,
        ready: Callable[[], Awaitable[asyncpg.Connection]],
        write: Callable[[tuple[Any, ...], str, tuple[Any, ...]], Awaitable[None]],
    ) -> None:
        self._ready = ready
        self._write = write
        self.updated: set[str] = set()

    async def lock_sequence_name(self, tenant: str, name: str) -> None:
        c = await self._ready()
        await c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"seq/{tenant}/{name}")

    async def sequence(self, tenant: str, name: str, version: int | None) -> SequenceRow | None:
        c = await self._ready()
        if version is None:
            sql = (
                _SELECT_SEQUENCE + " WHERE tenant = $1 AND name = $2 ORDER BY version DESC LIMIT 1"
            )
            return _sequence(await c.fetchrow(sql, tenant, name))
        sql = _SELECT_SEQUENCE + " WHERE tenant = $1 AND name = $2 AND version = $3"
        return _sequence(await c.fetchrow(sql, tenant, name, version))

    async def insert_sequence(self, row: SequenceRow) -> None:
        c = await self._ready()
        await c.execute(
            "INSERT INTO sequences (tenant, name, version, definition, created_at) "
            "VALUES ($1, $2, $3, $4, $5)",
            row["tenant"], row["name"], row["version"], row["definition"], row["created_at"],
        )  # fmt: skip

    async def list_sequences(self, tenant: str, limit: int, after: str | None) -> list[SequenceRow]:
        c = await self._ready()
        sql = (
            "SELECT DISTINCT ON (name) tenant, name, version, definition, created_at "
            "FROM sequences WHERE tenant = $1 AND name > $2 ORDER BY name, version DESC LIMIT $3"
        )
        rows = await c.fetch(sql, tenant, after or "", limit)
        return cast("list[SequenceRow]", [dict(r) for r in rows])

    async def add_instance(self, row: NewInstanceRow) -> None:
        # Buffered with the transaction's other writes, so a batch start (P-WF-14) stores
        # its instances in one statement (postgres_bulk.py), not one round trip each.
        args = tuple(row.get(col) for col in NEW_INSTANCE_COLS)
        await self._write(("i", row["id"]), INSERT_INSTANCE_PLAIN, args)

    async def insert_instance(self, row: NewInstanceRow) -> tuple[InstanceRow, bool]:
        c = await self._ready()
        seq = await c.fetchval(_INSERT_INSTANCE, *(row.get(col) for col in _NEW_INSTANCE))
        if seq is not None:
            return {**row, "seq": seq}, True
        existing = await c.fetchrow(
            _SELECT_INSTANCE + " WHERE tenant = $1 AND idempotency_key = $2",
            row["tenant"], row["idempotency_key"],
        )  # fmt: skip
        return cast(InstanceRow, dict(existing)), False

    async def instance(self, instance_id: str) -> InstanceRow | None:
        c = await self._ready()
        sql = _SELECT_INSTANCE + " WHERE id = $1 FOR UPDATE"
        return _instance(await c.fetchrow(sql, instance_id))

    async def instances(self, instance_ids: list[str]) -> dict[str, InstanceRow]:
        c = await self._ready()
        sql = _SELECT_INSTANCE + " WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE"
        rows = await c.fetch(sql, sorted(set(instance_ids)))
        return {r["id"]: cast(InstanceRow, dict(r)) for r in rows}

    async def update_instance(self, row: InstanceRow) -> None:
        # Buffered with the transaction's other writes: an advance of many instances
        # stores them in one statement (postgres_bulk.py), not one round trip each.
        self.updated.add(row["id"])
        args = (row["id"], row["status"], row["output"], row["error"], row["state"],
                row["updated_at"], row["finished_at"])  # fmt: skip
        await self._write(("i", row["id"]), UPDATE_INSTANCE, args)

    async def lock_instance_key(self, tenant: str, key: str) -> None:
        c = await self._ready()
        # classid 4932954: instance keys, apart from task keys' 4932953 (postgres_keys.py)
        await c.execute(
            "SELECT pg_advisory_xact_lock(4932954, hashtext($1 || chr(31) || $2))", tenant, key
        )

    async def instance_slots(self, tenant: str, key: str, before_seq: int) -> tuple[int, int]:
        c = await self._ready()
        row = await c.fetchrow(
            "SELECT count(*) FILTER (WHERE status = 'running') AS running, "
            "count(*) FILTER (WHERE status = 'held' AND seq < $3) AS ahead FROM instances "
            "WHERE tenant = $1 AND concurrency_key = $2 AND status IN ('running', 'held')",
            tenant, key, before_seq,
        )  # fmt: skip
        return int(row["running"]), int(row["ahead"])

    async def held_instances(self, tenant: str, key: str, limit: int) -> list[InstanceRow]:
        c = await self._ready()
        rows = await c.fetch(
            _SELECT_INSTANCE + " WHERE tenant = $1 AND concurrency_key = $2 AND status = 'held' "
            "ORDER BY seq LIMIT $3 FOR UPDATE",
            tenant, key, limit,
        )  # fmt: skip
        return cast("list[InstanceRow]", [dict(r) for r in rows])

    async def list_instances(
        self,
        tenant: str,
        sequence: str | None,
        statuses: tuple[str, ...],
        limit: int,
        before_seq: int | None,
    ) -> list[InstanceRow]:
        c = await self._ready()
        args: list[Any] = [tenant]
        where = ["tenant = $1"]  # P-TEN-3
        if sequence is not None:
            args.append(sequence)
            where.append(f"sequence = ${len(args)}")
        if statuses:
            args.append(list(statuses))
            where.append(f"status = ANY(${len(args)}::text[])")
        if before_seq is not None:
            args.append(before_seq)
            where.append(f"seq < ${len(args)}")
        args.append(limit)
        sql = (
            _SELECT_INSTANCE + " WHERE " + " AND ".join(where)
            + f" ORDER BY seq DESC LIMIT ${len(args)}"
        )  # fmt: skip
        return cast("list[InstanceRow]", [dict(r) for r in await c.fetch(sql, *args)])

    async def add_timer(
        self, tenant: str, instance_id: str, step_id: str, run: int, fire_at: int
    ) -> None:
        c = await self._ready()
        await c.execute(
            "INSERT INTO instance_events (tenant, instance_id, step_id, run, fire_at) "
            "VALUES ($1, $2, $3, $4, $5)",
            tenant, instance_id, step_id, run, fire_at,
        )  # fmt: skip

    async def take_due_events(self, now: int, limit: int) -> list[InstanceEventRow]:
        """Due events no other replica holds, deleted as they are read."""
        c = await self._ready()
        rows = await c.fetch(
            "DELETE FROM instance_events WHERE id IN (SELECT id FROM instance_events "
            "WHERE fire_at <= $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) "
            f"RETURNING {_EVENT_COLUMNS}",
            now, limit,
        )  # fmt: skip
        return _events(rows)

    async def take_task_events(self, task_ids: list[str]) -> list[InstanceEventRow]:
        c = await self._ready()
        rows = await c.fetch(
            f"DELETE FROM instance_events WHERE task_id = ANY($1::text[]) RETURNING {_EVENT_COLUMNS}",
            task_ids,
        )
        return _events(rows)
