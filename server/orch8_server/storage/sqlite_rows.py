"""SQLite rows from and to stored text: JSON columns are TEXT, parsed as a row is read."""

from __future__ import annotations

from typing import Any

import orjson

from orch8_server.storage.rows import (
    ATTEMPT_COLUMNS,
    TASK_COLUMNS,
    WORKER_COLUMNS,
    AttemptRow,
    TaskRow,
    WorkerRow,
)

TASK_JSON = frozenset(
    (
        "params", "context", "headers", "retry", "output", "error", "checkpoint", "progress",
        "required_labels",
    )
)  # fmt: skip
ATTEMPT_JSON = frozenset(("error", "reply"))
WORKER_JSON = frozenset(("handlers", "queues", "labels"))
TASK_SELECT = "SELECT " + ", ".join(TASK_COLUMNS) + " FROM tasks"
ATTEMPT_SELECT = "SELECT " + ", ".join(ATTEMPT_COLUMNS) + " FROM attempts"
WORKER_SELECT = "SELECT " + ", ".join(WORKER_COLUMNS) + " FROM workers"
_loads = orjson.loads


def dumps(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def decode(columns: tuple[str, ...], json_cols: frozenset[str], raw: tuple[Any, ...]) -> Any:
    """The row of `columns` (typed by the caller: one row type per column tuple)."""
    row = dict(zip(columns, raw, strict=True))
    for col in json_cols:
        value = row[col]
        if value is not None:
            row[col] = _loads(value)
    return row


def task(raw: tuple[Any, ...]) -> TaskRow:
    row: TaskRow = decode(TASK_COLUMNS, TASK_JSON, raw)
    return row


def attempt(raw: tuple[Any, ...]) -> AttemptRow:
    row: AttemptRow = decode(ATTEMPT_COLUMNS, ATTEMPT_JSON, raw)
    return row


def worker(raw: tuple[Any, ...]) -> WorkerRow:
    row: WorkerRow = decode(WORKER_COLUMNS, WORKER_JSON, raw)
    return row
