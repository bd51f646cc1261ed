"""P-SDK-31: the worker's log lines, as the adapter reports them (`log` events: `level`,
`message` and the SDK's structured `fields`, among them the line's `event`).

Each function returns human-readable reasons; an empty list means the check passed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .run import ScenarioRun

TASK = ("task_id", "handler", "attempt")

# docs/protocol.md P-SDK-31: event -> (level, fields every line of it carries beside worker_id).
TABLE: dict[str, tuple[str, tuple[str, ...]]] = {
    "start": ("info", ("url", "handlers", "queues", "concurrency")),
    "registered": ("info", ("url",)),
    "outage": ("warning", ("operation", "url", "cause")),
    "refused": ("warning", ("operation", "url", "status", "code", "cause")),
    "config_error": ("error", ("url", "status", "code", "cause")),
    "directive": ("info", ("directive",)),
    "local_quiet": ("info", ("quiet",)),
    "signal": ("info", ("signal", "grace_period_ms")),
    "second_signal": ("warning", ("signal",)),
    "stopping": ("info", ("reason", "grace_period_ms")),
    "grace_ended": ("warning", ("tasks", "cause")),
    "task_rejected": ("warning", (*TASK, "code", "cause")),
    "abandoned": ("warning", (*TASK, "reason", "cause")),  # info when the reason is `cancelled`
    "given_up": ("error", (*TASK, "operation", "cause")),
    "hook_error": ("warning", ("hook", "cause")),
    "health": ("info", ("addr",)),
    "task_started": ("debug", TASK),
    "task_completed": ("debug", TASK),
    "task_failed": ("debug", (*TASK, "code", "retryable")),
    "task_released": ("debug", (*TASK, "reason")),  # info when the reason is `expired` (P-SDK-33)
    "stopped": ("info", ("stats",)),
    "internal_error": ("error", ("operation", "cause")),
}


def level_of(fields: dict) -> str | None:
    event = fields.get("event")
    if (event, fields.get("reason")) in (("abandoned", "cancelled"), ("task_released", "expired")):
        return "info"
    return TABLE[event][0] if event in TABLE else None


def lines(run: ScenarioRun, name: str) -> list[dict]:
    """The log lines worker `name` reported, oldest first."""
    return [e for e in run.events("log", worker=name) if isinstance(e.get("fields"), dict)]


def end_state(run: ScenarioRun, expect: dict) -> list[str]:
    out = []
    for name, wanted in expect.get("log_events", {}).items():
        if not any(e.get("logs") for e in run.events("ready", worker=name)):
            # An adapter without an SDK logger (raw-http) says so in `ready` by leaving `logs` out.
            run.notes.append(f"P-SDK-31 log lines not applicable: {name}'s adapter reports no SDK log")
            continue
        out += every_line_in_table(run, name)
        for spec in wanted:
            out += log_event(run, name, spec)
    return out


def every_line_in_table(run: ScenarioRun, name: str) -> list[str]:
    """Each line the worker logged is an event of the table, at its level, with its fields."""
    seen = run.events("log", worker=name)
    if not seen:
        return [f"{name}: its adapter reported no log line (P-SDK-31)"]
    out = []
    for line in seen:
        fields = line.get("fields") if isinstance(line.get("fields"), dict) else {}
        event, message = fields.get("event"), str(line.get("message", ""))[:120]
        if event not in TABLE:
            out.append(f"{name}: logged {message!r} with event {event!r}, not an event of P-SDK-31's table")
            continue
        if line.get("level") != level_of(fields):
            out.append(f"{name}: logged event={event} at {line.get('level')}, expected {level_of(fields)} (P-SDK-31)")
        missing = [k for k in ("worker_id", *TABLE[event][1]) if fields.get(k) in (None, "")]
        if missing:
            out.append(f"{name}: its event={event} line {message!r} lacks {missing} (P-SDK-31)")
        cause = fields.get("cause")
        if isinstance(cause, str) and cause and cause not in str(line.get("message", "")):
            out.append(f"{name}: its event={event} line {message!r} does not end with its cause {cause!r}")
    return sorted(set(out), key=out.index)[:6]


def log_event(run: ScenarioRun, name: str, spec: dict) -> list[str]:
    """A line with this event whose fields match `fields` (field -> regex on its text)."""
    event, patterns = spec["event"], spec.get("fields", {})
    candidates = [line for line in lines(run, name) if line["fields"].get("event") == event]
    for line in candidates:
        f = line["fields"]
        if all(k in f and re.search(p, _text(f[k])) for k, p in patterns.items()):
            return []
    seen = [{k: line["fields"].get(k) for k in patterns} for line in candidates][:3]
    return [f"{name}: no log line event={event} with fields matching {patterns} (P-SDK-31; saw {seen or 'none'})"]


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
