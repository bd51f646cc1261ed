"""Loads scenario files and validates them against schema/scenario.schema.json."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

HERE = Path(__file__).resolve().parent.parent
SCENARIOS = HERE / "scenarios"
SCHEMA = HERE / "schema" / "scenario.schema.json"


class ScenarioError(Exception):
    """A scenario file that does not match the schema or its own file name."""


def load_all(directory: Path = SCENARIOS) -> list[dict]:
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    scenarios = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except ValueError as err:
            raise ScenarioError(f"{path.name}: not JSON: {err}") from None
        problems = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
        if problems:
            lines = [f"  {'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in problems]
            raise ScenarioError(f"{path.name} does not match the schema:\n" + "\n".join(lines))
        if data["id"] != path.stem:
            raise ScenarioError(f"{path.name}: id {data['id']!r} must equal the file name")
        check_refs(data, path.name)
        scenarios.append(data)
    return scenarios


def task_refs(specs: list[dict]) -> dict[str, list[str]]:
    """Group ref -> member refs (`t` with count 3 -> t.1, t.2, t.3; else just `t`)."""
    groups = {}
    for spec in specs:
        count = spec.get("count")
        groups[spec["ref"]] = [f"{spec['ref']}.{i}" for i in range(1, count + 1)] if count else [spec["ref"]]
    return groups


def check_refs(data: dict, name: str) -> None:
    """Every task ref and worker name a scenario mentions must exist."""
    specs = list(data["tasks"])
    workers = {"w1"}
    for step in data.get("timeline", []):
        if step["action"] == "enqueue":
            specs += step["tasks"]
        if step["action"] == "start_worker":
            workers.add(step["worker"])
    groups = task_refs(specs)
    known = set(groups) | {m for members in groups.values() for m in members}
    if len(groups) != len(specs):
        raise ScenarioError(f"{name}: duplicate task ref")
    mentioned = set(data["expect"].get("tasks", {})) | set(data["expect"].get("order", []))
    mentioned |= {e["task"] for e in data["expect"].get("adapter_events", []) if "task" in e}
    mentioned |= set(data["expect"].get("trace_context", []))
    for step in data.get("timeline", []):
        after = step.get("after", {})
        mentioned |= {after[k] for k in ("handler_started", "handler_ended") if k in after}
        mentioned |= set(after.get("task_status", {}))
        if step["action"] == "cancel":
            mentioned.add(step["task"])
        if step["action"] == "expect":
            mentioned |= set(step.get("tasks", {}))
    for ref in sorted(mentioned - known):
        raise ScenarioError(f"{name}: unknown task ref {ref!r}")
    expect = data["expect"]
    named = (
        set(expect.get("workers", {}))
        | set(expect.get("max_concurrent", {}))
        | set(expect.get("observability", []))
        | set(expect.get("polls_overlap_reporting", []))
    )
    for key in (
        "poll_limits",
        "poll_threshold",
        "polls_during_faults",
        "stderr_mentions",
        "batch_polls_within_free_slots",
        "max_running",
    ):
        named |= set(expect.get(key, {}))
    named |= {
        e["worker"] for e in expect.get("retry_after_waits", []) + expect.get("adapter_events", []) if "worker" in e
    }
    named |= {s["worker"] for s in data.get("timeline", []) if "worker" in s}
    for ref in data["expect"].get("tasks", {}).values():
        if "completed_by" in ref:
            named.add(ref["completed_by"])
    for worker in sorted(named - workers):
        raise ScenarioError(f"{name}: worker {worker!r} is never started")
