"""Workflow rows to wire objects (Sequence, Instance, StepRun of openapi.yaml)."""

from __future__ import annotations

from typing import Any

from orch8_server.storage.base import Row
from orch8_server.timefmt import iso, iso_or_none


def blocks_of(definition: dict[str, Any]) -> list[Any]:
    """The top-level blocks, whichever name the definition was given with (P-WF-1)."""
    found: list[Any] = definition["blocks"] if "blocks" in definition else definition["steps"]
    return found


def sequence(row: Row) -> dict[str, Any]:
    definition = row["definition"]
    blocks = blocks_of(definition)
    return {
        "name": row["name"],
        "tenant": row["tenant"],  # P-TEN-1
        "version": row["version"],
        "steps": blocks,
        "blocks": blocks,
        "on_error": definition.get("on_error"),
        "created_at": iso(row["created_at"]),
    }


def step_run(rec: dict[str, Any]) -> dict[str, Any]:
    # Records of 1.x instances lack the block fields: a step, or a parallel group.
    group = rec["group"]
    return {
        "id": rec["id"],
        "key": rec.get("key", rec["id"]),
        "type": rec.get("type", "step"),
        "group": group,
        "lane": rec.get("lane"),
        "status": rec["status"],
        "task_id": rec["task_id"],
        "output": rec["output"],
        "error": rec["error"],
        "attempts": rec["attempts"],
        "fallback": rec["fallback"],
        "started_at": iso_or_none(rec["started_at"]),
        "finished_at": iso_or_none(rec["finished_at"]),
        "chosen": rec.get("chosen"),
        "iterations": rec.get("iterations"),
        "child_instance_id": rec.get("child_instance_id"),
    }


def instance(row: Row) -> dict[str, Any]:
    state = row["state"]
    on_error = state.get("on_error")
    return {
        "id": row["id"],
        "tenant": row["tenant"],  # P-TEN-1
        "sequence": row["sequence"],
        "version": row["version"],
        "status": "running" if row["status"] == "held" else row["status"],  # P-KEY-7
        "input": row["input"],
        "context": {"data": row["input"], "config": state.get("config") or {}},
        "output": row["output"],
        "error": row["error"],
        "steps": [step_run(r) for r in state["steps"]],
        "on_error": None if on_error is None else step_run(on_error),
        "idempotency_key": row["idempotency_key"],
        "concurrency_key": row.get("concurrency_key"),
        "max_concurrency": row.get("max_concurrency"),
        "created_at": iso(row["created_at"]),
        "updated_at": iso(row["updated_at"]),
        "finished_at": iso_or_none(row["finished_at"]),
    }
