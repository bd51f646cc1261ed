"""Sequence definitions: structural checks and `$from` references (P-WF-2, P-WF-3).

The contract's schema checks shapes; what it cannot say (one of handler/parallel, unique
step ids, references only to earlier steps) is checked here, each error with a JSON
pointer into the request body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orch8_server.problems import Problem

if TYPE_CHECKING:
    from orch8_server._generated.models import FieldProblem

SLEEP = "sleep"  # the built-in handler: a timer, never dispatched (P-WF-3)
ON_ERROR = "on_error"  # the record (and the task context step_id) of the on_error step
# P-WF-1: ids the engine gives its own records; a step may not take them (a step named
# on_error would share the on_error step's step_id, record and timer).
RESERVED_IDS = frozenset({ON_ERROR})
REF = "$from"
MAX_SLEEP_MS = 31_536_000_000
_TASK_ONLY = ("handler", "params", "queue_name", "priority", "retry", "fallback")


class BadReference(Exception):
    """A `$from` path names nothing in the instance (failure code bad_reference)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def _problem(errors: list[dict[str, str]]) -> Problem:
    first = errors[0]
    fields: list[FieldProblem] = [{"pointer": e["pointer"], "detail": e["detail"]} for e in errors]
    return Problem(
        "validation_error",
        f"{len(errors)} field(s) invalid: {first['pointer']} {first['detail']}",
        errors=fields,
    )


def is_reference(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get(REF), str)


def _references(value: Any, pointer: str, errors: list[dict[str, str]]) -> list[tuple[str, str]]:
    """Every (pointer, path) of a `$from` inside params (whole values only). An object
    with a `$from` member that is not exactly {"$from": "<path>"} is an error (P-WF-2):
    taken as literal params it would hide the mistake until a worker saw it."""
    if is_reference(value):
        return [(pointer + "/$from", value[REF])]
    found: list[tuple[str, str]] = []
    if isinstance(value, dict):
        if REF in value:
            if not isinstance(value[REF], str):
                errors.append({"pointer": pointer + "/$from", "detail": "must be a string path"})
            else:
                errors.append({"pointer": pointer, "detail": 'a reference must be exactly '
                               '{"$from": "<path>"}, with no other member'})  # fmt: skip
            return found
        for key, item in value.items():
            esc = str(key).replace("~", "~0").replace("/", "~1")
            found += _references(item, f"{pointer}/{esc}", errors)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _references(item, f"{pointer}/{i}", errors)
    return found


def _check_reference(path: str, allowed: set[str], known: set[str], me: str) -> str | None:
    """Why `path` may not be used by step `me`, or None (P-WF-2)."""
    parts = path.split(".")
    if parts[0] == "input" and all(parts[1:]):
        return None
    if parts[0] != "steps" or len(parts) < 3 or parts[2] != "output" or not all(parts):
        return "must be input[.path] or steps.<step_id>.output[.path]"
    target = parts[1]
    if target == me:
        return f"step {me} cannot refer to its own output"
    if target not in known:
        return f"no step {target} in this sequence"
    if target not in allowed:
        return f"step {target} does not run before this step"
    return None


def validate(body: Mapping[str, Any]) -> None:
    """422 for what the schema cannot express (P-WF-2, P-WF-3)."""
    steps: list[dict[str, Any]] = body["steps"]
    errors: list[dict[str, str]] = []
    known: set[str] = set()
    seen: dict[str, str] = {}

    def add_id(step_id: str, pointer: str) -> None:
        if step_id in RESERVED_IDS:  # P-WF-1
            errors.append({"pointer": pointer, "detail": f"{step_id} is reserved (the "
                           "sequence's on_error step uses it); choose another step id"})  # fmt: skip
        elif step_id in seen:
            errors.append({"pointer": pointer, "detail": f"step id {step_id} is used twice"})
        seen[step_id] = pointer
        known.add(step_id)

    for i, step in enumerate(steps):
        add_id(step["id"], f"/steps/{i}/id")
        for j, child in enumerate(step.get("parallel", [])):
            add_id(child["id"], f"/steps/{i}/parallel/{j}/id")
    earlier: set[str] = set()  # outputs available to the step being checked
    for i, step in enumerate(steps):
        ptr = f"/steps/{i}"
        group = step.get("parallel")
        if (group is None) == ("handler" not in step):
            errors.append({"pointer": ptr, "detail": "needs exactly one of handler, parallel"})
            continue
        if group is not None:
            for name in _TASK_ONLY:
                if name in step:
                    errors.append({"pointer": f"{ptr}/{name}", "detail": "not allowed on a group"})
            for j, child in enumerate(group):
                cptr = f"{ptr}/parallel/{j}"
                if "handler" not in child or "parallel" in child:
                    errors.append({"pointer": cptr, "detail": "a group child needs a handler"})
                    continue
                _check_task(child, cptr, earlier, known, errors)
            earlier |= {step["id"], *(c["id"] for c in group)}
            continue
        _check_task(step, ptr, earlier, known, errors)
        earlier.add(step["id"])
    if body.get("on_error") is not None:  # null: none, as a sequence read back says (P-WF-1)
        _check_action(body["on_error"], "/on_error", known, known, "", errors)
    if errors:
        raise _problem(errors)


def _check_task(
    step: dict[str, Any], ptr: str, earlier: set[str], known: set[str], errors: list[Any]
) -> None:
    _check_action(step, ptr, earlier, known, step["id"], errors)
    if "fallback" in step:
        _check_action(step["fallback"], f"{ptr}/fallback", earlier, known, step["id"], errors)


def _check_action(
    action: dict[str, Any],
    ptr: str,
    allowed: set[str],
    known: set[str],
    me: str,
    errors: list[dict[str, str]],
) -> None:
    params = action.get("params", {})
    for pointer, path in _references(params, f"{ptr}/params", errors):
        why = _check_reference(path, allowed, known, me)
        if why is not None:
            errors.append({"pointer": pointer, "detail": why})
    if action["handler"] == SLEEP:
        duration = params.get("duration_ms")
        if not is_reference(duration) and not (
            isinstance(duration, int)
            and not isinstance(duration, bool)
            and 0 <= duration <= MAX_SLEEP_MS
        ):
            errors.append(
                {
                    "pointer": f"{ptr}/params/duration_ms",
                    "detail": f"sleep needs an integer duration_ms in 0..{MAX_SLEEP_MS}",
                }
            )


def lookup(path: str, scope: dict[str, Any]) -> Any:
    """The value at a dotted path of `scope` ({input, steps: {id: {output}}})."""
    node: Any = scope
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise BadReference(path)
    return node


def resolve(params: Any, scope: dict[str, Any]) -> Any:
    """`params` with every `$from` replaced by its value (P-WF-2); BadReference if missing."""
    if is_reference(params):
        return lookup(params["$from"], scope)
    if isinstance(params, dict):
        return {k: resolve(v, scope) for k, v in params.items()}
    if isinstance(params, list):
        return [resolve(v, scope) for v in params]
    return params
