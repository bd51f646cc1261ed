"""Buffered PostgreSQL writes of many rows sent as one statement (postgres_tx.py).

A statement buffered for several rows is replaced by its bulk form: new tasks as one JSON
array of objects (json_to_recordset), attempt upserts as column arrays (unnest). Either is
one Bind instead of executemany's Bind+Execute per row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from orch8_server.storage.rows import ATTEMPT_COLUMNS, INSERT_COLUMNS, INSTANCE_COLUMNS

NEW_TASK_COLS = list(INSERT_COLUMNS)
INSERT_TASK_PLAIN = (
    f"INSERT INTO tasks ({', '.join(NEW_TASK_COLS)}) "
    f"VALUES ({', '.join(f'${i + 1}' for i in range(len(NEW_TASK_COLS)))})"
)
UPSERT_ATTEMPT = (
    f"INSERT INTO attempts ({', '.join(ATTEMPT_COLUMNS)}) "
    f"VALUES ({', '.join(f'${i + 1}' for i in range(len(ATTEMPT_COLUMNS)))}) "
    "ON CONFLICT (task_id, lease_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in ATTEMPT_COLUMNS[2:])
)
UPDATE_INSTANCE = (
    "UPDATE instances SET status = $2, output = $3, error = $4, state = $5, "
    "updated_at = $6, finished_at = $7 WHERE id = $1"
)
NEW_INSTANCE_COLS = [c for c in INSTANCE_COLUMNS if c != "seq"]
# An instance without an idempotency key (no conflict possible), buffered (workflows.py).
INSERT_INSTANCE_PLAIN = (
    f"INSERT INTO instances ({', '.join(NEW_INSTANCE_COLS)}) "
    f"VALUES ({', '.join(f'${i + 1}' for i in range(len(NEW_INSTANCE_COLS)))})"
)
_INSTANCE_TYPES = {  # column -> its type in `instances`
    "id": "text", "tenant": "text", "sequence": "text", "version": "integer",
    "status": "text", "input": "jsonb", "output": "jsonb", "error": "jsonb", "state": "jsonb",
    "idempotency_key": "text", "created_at": "bigint", "updated_at": "bigint",
    "finished_at": "bigint", "concurrency_key": "text", "max_concurrency": "integer",
}  # fmt: skip
_INSTANCE_UPDATED = {  # column -> its type in `instances`
    "id": "text", "status": "text", "output": "jsonb", "error": "jsonb", "state": "jsonb",
    "updated_at": "bigint", "finished_at": "bigint",
}  # fmt: skip
# Column types for the bulk forms below (json columns travel as text and are cast).
_TYPES = {
    "id": "text", "handler_name": "text", "queue_name": "text", "status": "text",
    "priority": "integer", "params": "json", "context": "json", "headers": "json",
    "attempt": "integer", "max_attempts": "integer", "retry": "json", "run_at": "bigint",
    "good_until": "bigint", "idempotency_key": "text", "created_at": "bigint",
    "updated_at": "bigint", "started_at": "bigint", "finished_at": "bigint",
    "worker_id": "text", "lease_id": "text", "lease_expires_at": "bigint",
    "lease_ms": "bigint", "lease_started_at": "bigint", "output": "json", "error": "json",
    "checkpoint": "json", "progress": "json", "cancel_reason": "text", "tenant": "text",
    "required_labels": "jsonb", "task_id": "text", "concurrency_key": "text",
    "max_concurrency": "integer", "rate_limit_key": "text",
    "ended_at": "bigint", "outcome": "text", "reply": "json",
}  # fmt: skip


_JSON = ("json", "jsonb")


def _unnest(cols: list[str] | tuple[str, ...], types: dict[str, str]) -> tuple[str, list[str]]:
    """`unnest($1::t[], ...) AS u(c0, ...)` over one array per column, and each column's
    value from it (json ones travel as text and are cast, so each is parsed once)."""
    args = ", ".join(
        f"${i + 1}::{'text' if types[c] in _JSON else types[c]}[]" for i, c in enumerate(cols)
    )
    names = ", ".join(f"c{i}" for i in range(len(cols)))
    values = [f"u.c{i}::{types[c]}" if types[c] in _JSON else f"u.c{i}" for i, c in enumerate(cols)]
    return f"unnest({args}) AS u({names})", values


def _bulk_insert(
    table: str, cols: list[str] | tuple[str, ...], tail: str = "", types: dict[str, str] = _TYPES
) -> str:
    """INSERT of many rows as one statement over column arrays (unnest): one Bind of a
    few arrays instead of executemany's Bind+Execute per row."""
    source, values = _unnest(cols, types)
    return (
        f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join(values)} FROM {source}" + tail
    )


# Many new tasks: one JSON array of row objects, split by json_to_recordset. asyncpg
# encodes an array parameter element by element in Python (29 arrays here); the JSON
# array is one orjson call through the connection's json codec.
_INSERT_TASKS_BULK = (
    f"INSERT INTO tasks ({', '.join(NEW_TASK_COLS)}) SELECT {', '.join(NEW_TASK_COLS)} "
    "FROM json_to_recordset($1::json) AS r("
    + ", ".join(f"{c} {_TYPES[c]}" for c in NEW_TASK_COLS)
    + ")"
)
# Steps of instances an advance holds locked (workflows.py): the same insert, keyed. A key
# already stored (P-WF-4, P-TASK-3) inserts nothing; the ids returned are the rows stored.
_IF_NEW = " ON CONFLICT (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
INSERT_TASKS_IF_NEW = _INSERT_TASKS_BULK + _IF_NEW + " RETURNING id"
# Many instances advanced by one unit of work (workflows.py): one UPDATE over column arrays
# (unnest), the JSON columns as text cast to jsonb: 43-65 us of executor time per row as
# a json_to_recordset of the rows, which parses every state twice (bench/results/
# 2026-11-28-batch-start.md). A None lands as SQL NULL, as in the single form.
_UPDATED_SOURCE, _UPDATED_VALUES = _unnest(list(_INSTANCE_UPDATED), _INSTANCE_UPDATED)
_UPDATE_INSTANCES_BULK = (
    "UPDATE instances i SET "
    + ", ".join(
        f"{c} = {v}" for c, v in list(zip(_INSTANCE_UPDATED, _UPDATED_VALUES, strict=True))[1:]
    )
    + f" FROM {_UPDATED_SOURCE} WHERE i.id = u.c0"
)
# Many instances started by one unit (a batch start, P-WF-14), the same way.
_INSERT_INSTANCES_BULK = _bulk_insert("instances", NEW_INSTANCE_COLS, types=_INSTANCE_TYPES)
_UPSERT_ATTEMPTS_BULK = _bulk_insert(
    "attempts",
    ATTEMPT_COLUMNS,
    " ON CONFLICT (task_id, lease_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in ATTEMPT_COLUMNS[2:]),
)


def _columns(json_at: list[bool]) -> Callable[[list[tuple[Any, ...]]], list[Any]]:
    """Argument tuples -> one array per column (the unnest form), json ones as text."""

    def encode(rows: list[tuple[Any, ...]]) -> list[Any]:
        cols = [list(c) for c in zip(*rows, strict=True)]
        for i, is_json in enumerate(json_at):
            if is_json:
                cols[i] = [None if v is None else orjson.dumps(v).decode() for v in cols[i]]
        return cols

    return encode


def _records(cols: list[str]) -> Callable[[list[tuple[Any, ...]]], list[Any]]:
    """Argument tuples -> one JSON array of objects (the json_to_recordset form)."""
    return lambda rows: [[dict(zip(cols, r, strict=True)) for r in rows]]


new_task_records = _records(NEW_TASK_COLS)


# Buffered statement -> (its bulk form, how argument tuples become its arguments, the key
# positions that must be unique within one bulk statement).
BULK: dict[str, tuple[str, Callable[[list[tuple[Any, ...]]], list[Any]], tuple[int, ...]]] = {
    INSERT_TASK_PLAIN: (_INSERT_TASKS_BULK, new_task_records, (0,)),
    INSERT_INSTANCE_PLAIN: (
        _INSERT_INSTANCES_BULK,
        _columns([_INSTANCE_TYPES[c] in _JSON for c in NEW_INSTANCE_COLS]),
        (0,),
    ),
    UPDATE_INSTANCE: (
        _UPDATE_INSTANCES_BULK,
        _columns([t in _JSON for t in _INSTANCE_UPDATED.values()]),
        (0,),
    ),
    UPSERT_ATTEMPT: (
        _UPSERT_ATTEMPTS_BULK,
        _columns([_TYPES[c] in _JSON for c in ATTEMPT_COLUMNS]),
        (0, 1),
    ),
}
