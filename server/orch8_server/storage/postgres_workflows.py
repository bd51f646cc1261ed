"""Workflow rows on PostgreSQL: sequences, instances and instance events (P-WF-1..10).

Every method runs inside a transaction (`tx` is a PgTx). Instances are read FOR UPDATE,
so replicas advancing the same instance take turns (P-WF-5); events are taken with
SKIP LOCKED, so replicas share them without waiting on each other.
"""

from __future__ import annotations

from typing import Any

from orch8_server.storage.base import Row
from orch8_server.storage.postgres_tx import PgTx

INSTANCE_COLUMNS = (
    "seq", "id", "tenant", "sequence", "version", "status", "input", "output", "error",
    "state", "idempotency_key", "created_at", "updated_at", "finished_at",
)  # fmt: skip
_SELECT_INSTANCE = "SELECT " + ", ".join(INSTANCE_COLUMNS) + " FROM instances"
_SELECT_SEQUENCE = "SELECT tenant, name, version, definition, created_at FROM sequences"


def _row(record: Any) -> Row | None:
    return None if record is None else dict(record)


async def _conn(tx: Any) -> Any:
    t: PgTx = tx
    await t.flush()  # BEGIN, and the buffered writes first
    return t.c


class PostgresWorkflows:
    """The workflow tables of one PostgreSQL database."""

    async def sequence(self, tx: Any, tenant: str, name: str, version: int | None) -> Row | None:
        c = await _conn(tx)
        if version is None:
            sql = (
                _SELECT_SEQUENCE + " WHERE tenant = $1 AND name = $2 ORDER BY version DESC LIMIT 1"
            )
            return _row(await c.fetchrow(sql, tenant, name))
        sql = _SELECT_SEQUENCE + " WHERE tenant = $1 AND name = $2 AND version = $3"
        return _row(await c.fetchrow(sql, tenant, name, version))

    async def lock_sequence_name(self, tx: Any, tenant: str, name: str) -> None:
        """Definers of one name take turns, so versions never collide (P-WF-1)."""
        c = await _conn(tx)
        await c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"seq/{tenant}/{name}")

    async def insert_sequence(self, tx: Any, row: Row) -> None:
        c = await _conn(tx)
        await c.execute(
            "INSERT INTO sequences (tenant, name, version, definition, created_at) "
            "VALUES ($1, $2, $3, $4, $5)",
            row["tenant"], row["name"], row["version"], row["definition"], row["created_at"],
        )  # fmt: skip

    async def list_sequences(
        self, tx: Any, tenant: str, limit: int, after: str | None
    ) -> list[Row]:
        c = await _conn(tx)
        sql = (
            "SELECT DISTINCT ON (name) tenant, name, version, definition, created_at "
            "FROM sequences WHERE tenant = $1 AND name > $2 ORDER BY name, version DESC LIMIT $3"
        )
        return [dict(r) for r in await c.fetch(sql, tenant, after or "", limit)]

    async def insert_instance(self, tx: Any, row: Row) -> tuple[Row, bool]:
        c = await _conn(tx)
        cols = [col for col in INSTANCE_COLUMNS if col != "seq"]
        seq = await c.fetchval(
            f"INSERT INTO instances ({', '.join(cols)}) VALUES "
            f"({', '.join(f'${i + 1}' for i in range(len(cols)))}) "
            "ON CONFLICT (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL "
            "DO NOTHING RETURNING seq",
            *(row[col] for col in cols),
        )
        if seq is not None:
            return {**row, "seq": seq}, True
        existing = await c.fetchrow(
            _SELECT_INSTANCE + " WHERE tenant = $1 AND idempotency_key = $2",
            row["tenant"], row["idempotency_key"],
        )  # fmt: skip
        return dict(existing), False

    async def instance(self, tx: Any, instance_id: str) -> Row | None:
        c = await _conn(tx)
        return _row(await c.fetchrow(_SELECT_INSTANCE + " WHERE id = $1 FOR UPDATE", instance_id))

    async def update_instance(self, tx: Any, row: Row) -> None:
        c = await _conn(tx)
        await c.execute(
            "UPDATE instances SET status = $2, output = $3, error = $4, state = $5, "
            "updated_at = $6, finished_at = $7 WHERE id = $1",
            row["id"], row["status"], row["output"], row["error"], row["state"],
            row["updated_at"], row["finished_at"],
        )  # fmt: skip

    async def list_instances(
        self,
        tx: Any,
        tenant: str,
        sequence: str | None,
        statuses: tuple[str, ...],
        limit: int,
        before_seq: int | None,
    ) -> list[Row]:
        c = await _conn(tx)
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
        return [dict(r) for r in await c.fetch(sql, *args)]

    async def add_timer(
        self, tx: Any, tenant: str, instance_id: str, step_id: str, run: int, fire_at: int
    ) -> None:
        c = await _conn(tx)
        await c.execute(
            "INSERT INTO instance_events (tenant, instance_id, step_id, run, fire_at) "
            "VALUES ($1, $2, $3, $4, $5)",
            tenant, instance_id, step_id, run, fire_at,
        )  # fmt: skip

    async def take_due_events(self, tx: Any, now: int, limit: int) -> list[Row]:
        """Due events no other replica holds, deleted as they are read."""
        c = await _conn(tx)
        rows = await c.fetch(
            "DELETE FROM instance_events WHERE id IN (SELECT id FROM instance_events "
            "WHERE fire_at <= $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) "
            "RETURNING id, tenant, instance_id, task_id, step_id, run",
            now, limit,
        )  # fmt: skip
        return sorted((dict(r) for r in rows), key=lambda e: e["id"])

    async def ended_events(self, tx: Any, ended: list[tuple[str, str, str]]) -> list[Row]:
        """P-WF-5: the events the trigger recorded for these (tenant, instance, task) ends,
        taken. A completion may commit alone (autocommit) before the caller advances; its
        event is what the pump finds if the process dies in between."""
        return await self.take_task_events(tx, [task_id for _, _, task_id in ended])

    async def take_task_events(self, tx: Any, task_ids: list[str]) -> list[Row]:
        """These tasks' events (the trigger wrote them in this transaction), deleted."""
        c = await _conn(tx)
        rows = await c.fetch(
            "DELETE FROM instance_events WHERE task_id = ANY($1::text[]) "
            "RETURNING id, tenant, instance_id, task_id, step_id, run",
            task_ids,
        )
        return sorted((dict(r) for r in rows), key=lambda e: e["id"])

    async def next_event_at(self, tx: Any) -> int | None:
        c = await _conn(tx)
        value: int | None = await c.fetchval("SELECT min(fire_at) FROM instance_events")
        return value
