"""Workflow rows on SQLite: sequences, instances and instance events (P-WF-1..10).

Every method runs inside a transaction of the storage (`tx` is a SqliteTx) so the
lifecycle can read, decide and write an instance atomically with the tasks it dispatches.
"""

from __future__ import annotations

from typing import Any

from orch8_server.storage.base import Row
from orch8_server.storage.sqlite_tx import SqliteTx, decode, dumps

INSTANCE_COLUMNS = (
    "seq", "id", "tenant", "sequence", "version", "status", "input", "output", "error",
    "state", "idempotency_key", "created_at", "updated_at", "finished_at",
)  # fmt: skip
_INSTANCE_JSON = frozenset(("input", "output", "error", "state"))
_SELECT_INSTANCE = "SELECT " + ", ".join(INSTANCE_COLUMNS) + " FROM instances"
_SEQUENCE_COLUMNS = ("tenant", "name", "version", "definition", "created_at")
_SELECT_SEQUENCE = "SELECT " + ", ".join(_SEQUENCE_COLUMNS) + " FROM sequences"


def _instance(raw: tuple[Any, ...] | None) -> Row | None:
    return None if raw is None else decode(INSTANCE_COLUMNS, _INSTANCE_JSON, raw)


def _sequence(raw: tuple[Any, ...] | None) -> Row | None:
    return None if raw is None else decode(_SEQUENCE_COLUMNS, frozenset(("definition",)), raw)


class SqliteWorkflows:
    """The workflow tables of one SQLite database."""

    async def sequence(self, tx: Any, tenant: str, name: str, version: int | None) -> Row | None:
        t: SqliteTx = tx
        t.flush()
        if version is None:
            sql = _SELECT_SEQUENCE + " WHERE tenant = ? AND name = ? ORDER BY version DESC LIMIT 1"
            return _sequence(t.c.execute(sql, (tenant, name)).fetchone())
        sql = _SELECT_SEQUENCE + " WHERE tenant = ? AND name = ? AND version = ?"
        return _sequence(t.c.execute(sql, (tenant, name, version)).fetchone())

    async def insert_sequence(self, tx: Any, row: Row) -> None:
        t: SqliteTx = tx
        t.flush()  # the single connection serialises definers: no version race
        t.c.execute(
            "INSERT INTO sequences (tenant, name, version, definition, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (row["tenant"], row["name"], row["version"], dumps(row["definition"]),
             row["created_at"]),
        )  # fmt: skip

    async def list_sequences(
        self, tx: Any, tenant: str, limit: int, after: str | None
    ) -> list[Row]:
        t: SqliteTx = tx
        t.flush()
        sql = (
            _SELECT_SEQUENCE + " s WHERE tenant = ? AND name > ? AND version = "
            "(SELECT max(version) FROM sequences m WHERE m.tenant = s.tenant AND m.name = s.name)"
            " ORDER BY name LIMIT ?"
        )
        rows = t.c.execute(sql, (tenant, after or "", limit)).fetchall()
        return [r for r in (_sequence(raw) for raw in rows) if r is not None]

    async def insert_instance(self, tx: Any, row: Row) -> tuple[Row, bool]:
        t: SqliteTx = tx
        t.flush()
        key = row.get("idempotency_key")
        if key is not None:
            existing = _instance(
                t.c.execute(
                    _SELECT_INSTANCE + " WHERE tenant = ? AND idempotency_key = ?",
                    (row["tenant"], key),
                ).fetchone()
            )
            if existing is not None:
                return existing, False
        cols = [c for c in INSTANCE_COLUMNS if c != "seq"]
        cur = t.c.execute(
            f"INSERT INTO instances ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            [dumps(row[c]) if c in _INSTANCE_JSON else row[c] for c in cols],
        )
        return {**row, "seq": cur.lastrowid}, True

    async def instance(self, tx: Any, instance_id: str) -> Row | None:
        t: SqliteTx = tx
        t.flush()
        return _instance(t.c.execute(_SELECT_INSTANCE + " WHERE id = ?", (instance_id,)).fetchone())

    async def update_instance(self, tx: Any, row: Row) -> None:
        t: SqliteTx = tx
        t.flush()
        t.c.execute(
            "UPDATE instances SET status = ?, output = ?, error = ?, state = ?, "
            "updated_at = ?, finished_at = ? WHERE id = ?",
            (row["status"], dumps(row["output"]), dumps(row["error"]), dumps(row["state"]),
             row["updated_at"], row["finished_at"], row["id"]),
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
        t: SqliteTx = tx
        t.flush()
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
        rows = t.c.execute(sql, [*args, limit]).fetchall()
        return [r for r in (_instance(raw) for raw in rows) if r is not None]

    async def add_timer(
        self, tx: Any, tenant: str, instance_id: str, step_id: str, run: int, fire_at: int
    ) -> None:
        t: SqliteTx = tx
        t.flush()
        t.c.execute(
            "INSERT INTO instance_events (tenant, instance_id, step_id, run, fire_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (tenant, instance_id, step_id, run, fire_at),
        )

    async def take_due_events(self, tx: Any, now: int, limit: int) -> list[Row]:
        """Due events, deleted as they are read (the transaction consumes them)."""
        t: SqliteTx = tx
        t.flush()
        rows = t.c.execute(
            "DELETE FROM instance_events WHERE id IN (SELECT id FROM instance_events "
            "WHERE fire_at <= ? ORDER BY id LIMIT ?) "
            "RETURNING id, tenant, instance_id, task_id, step_id, run",
            (now, limit),
        ).fetchall()
        cols = ("id", "tenant", "instance_id", "task_id", "step_id", "run")
        return sorted((dict(zip(cols, r, strict=True)) for r in rows), key=lambda e: e["id"])

    async def ended_events(self, tx: Any, ended: list[tuple[str, str, str]]) -> list[Row]:
        """P-WF-5: the (tenant, instance, task) ends as instance events. The caller advances
        in the transaction that ended the tasks, so nothing is stored (schema v6 dropped
        the trigger that made every status change pay for it)."""
        return [
            {"tenant": tenant, "instance_id": instance_id, "task_id": task_id, "step_id": None,
             "run": None}
            for tenant, instance_id, task_id in ended
        ]  # fmt: skip

    async def take_task_events(self, tx: Any, task_ids: list[str]) -> list[Row]:
        """These tasks' stored events (expiry's, or a schema v5 trigger's), deleted."""
        t: SqliteTx = tx
        t.flush()
        rows = t.c.execute(
            f"DELETE FROM instance_events WHERE task_id IN ({','.join('?' * len(task_ids))}) "
            "RETURNING id, tenant, instance_id, task_id, step_id, run",
            task_ids,
        ).fetchall()
        cols = ("id", "tenant", "instance_id", "task_id", "step_id", "run")
        return sorted((dict(zip(cols, r, strict=True)) for r in rows), key=lambda e: e["id"])

    async def next_event_at(self, tx: Any) -> int | None:
        t: SqliteTx = tx
        t.flush()
        value: int | None = t.c.execute("SELECT min(fire_at) FROM instance_events").fetchone()[0]
        return value
