"""Sequence definitions as stored (P-WF-1, P-WF-11).

A definition is given as `blocks` (Orch8's name) or `steps` (the 1.x name), or both when
equal (a sequence read back has both). It is stored as `{"model": 2, "blocks", "on_error"}`:
model 2 reads `{{ templates }}` in params; definitions stored before templates existed have
no model and keep passing such strings on as written. What the schema cannot say is
checked by compiling the tree (workflow_tree.py), each error with a JSON pointer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orch8_server.lifecycle.workflow_tree import DefinitionError, compile_definition
from orch8_server.problems import Problem

if TYPE_CHECKING:
    from orch8_server._generated.models import FieldProblem

MODEL = 2


def _problem(errors: list[dict[str, str]]) -> Problem:
    first = errors[0]
    fields: list[FieldProblem] = [{"pointer": e["pointer"], "detail": e["detail"]} for e in errors]
    return Problem(
        "validation_error",
        f"{len(errors)} field(s) invalid: {first['pointer']} {first['detail']}",
        errors=fields,
    )


def definition_of(body: Mapping[str, Any]) -> dict[str, Any]:
    """The definition to store, or 422 for what the schema cannot express."""
    blocks, steps = body.get("blocks"), body.get("steps")
    if blocks is None and steps is None:
        raise _problem([{"pointer": "", "detail": "needs blocks (or steps, the 1.x name)"}])
    if blocks is not None and steps is not None and blocks != steps:
        raise _problem([{"pointer": "/steps", "detail": "differs from blocks; give one of "
                         "them, or both equal (a sequence read back has both)"}])  # fmt: skip
    key = "blocks" if blocks is not None else "steps"
    try:
        compile_definition({key: blocks if blocks is not None else steps,
                            "on_error": body.get("on_error")})  # fmt: skip
    except DefinitionError as exc:
        raise _problem(exc.errors) from None
    return {"model": MODEL, "blocks": body.get("blocks", steps), "on_error": body.get("on_error")}
