"""The row types name exactly the columns backends select and zip into them (rows.py), and
an update type is a part of its row (the backends apply one to a cached row in place)."""

from __future__ import annotations

from typing import Any

import pytest

from orch8_server.storage import rows

_LEASE = ("status", "lease_id", "worker_id", "lease_expires_at", "lease_ms", "lease_started_at")


def _keys(row_type: Any) -> set[str]:
    return set(row_type.__required_keys__ | row_type.__optional_keys__)


@pytest.mark.parametrize(
    ("row_type", "columns"),
    [
        (rows.TaskRow, rows.TASK_COLUMNS),
        (rows.NewTaskRow, tuple(c for c in rows.TASK_COLUMNS if c != "seq")),
        (rows.AttemptRow, rows.ATTEMPT_COLUMNS),
        (rows.WorkerRow, rows.WORKER_COLUMNS),
        (rows.QueueControlRow, rows.QUEUE_CONTROL_COLUMNS),
        (rows.HandlerControlRow, rows.HANDLER_CONTROL_COLUMNS),
        (rows.CompletedRow, (*rows.COMPLETED_COLUMNS, "instance_id")),
        (rows.InstanceRow, rows.INSTANCE_COLUMNS),
        (rows.ClaimedRow, (*rows.CLAIM_COLUMNS, *_LEASE, "headers_json")),
    ],
)
def test_a_row_type_names_its_columns(row_type: Any, columns: tuple[str, ...]) -> None:
    assert _keys(row_type) == set(columns) and len(set(columns)) == len(columns)
    assert row_type.__optional_keys__ == frozenset()


@pytest.mark.parametrize(
    ("update", "row_type"),
    [
        (rows.TaskUpdate, rows.TaskRow),
        (rows.WorkerUpdate, rows.WorkerRow),
        (rows.QueueControlUpdate, rows.QueueControlRow),
    ],
)
def test_an_update_sets_columns_of_its_row_with_their_types(update: Any, row_type: Any) -> None:
    assert update.__required_keys__ == frozenset()
    assert _keys(update) <= _keys(row_type) - {"seq", "id", "tenant"}
    types = row_type.__annotations__
    assert {k: v for k, v in update.__annotations__.items()} == {
        k: types[k] for k in update.__annotations__
    }
