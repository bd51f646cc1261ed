"""Static half of the emitted-code check: the codes the server source can emit are exactly
the ones openapi.yaml declares (x-orch8-codes, x-orch8-failure-codes). The run-time half is
problem_codes.py, which watches every answer of the test session."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml
from problem_codes import REPO, declared_codes

from orch8_server import problems
from orch8_server.lifecycle import attempts

PACKAGE = REPO / "server" / "orch8_server"


def problem_literals() -> dict[str, str]:
    """Every string literal given as the code of `Problem(...)` in the server source."""
    found: dict[str, str] = {}
    for path in PACKAGE.rglob("*.py"):
        if "_generated" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            first = node.args[0]
            if name == "Problem" and isinstance(first, ast.Constant):
                found[str(first.value)] = f"{path.relative_to(REPO)}:{node.lineno}"
    return found


def test_every_problem_literal_in_the_source_is_declared() -> None:
    literals = problem_literals()
    assert len(literals) >= 8, literals  # the scan sees the source
    undeclared = {c: where for c, where in literals.items() if c not in declared_codes()}
    assert not undeclared, f"codes emitted but not in x-orch8-codes: {undeclared}"


def test_problem_table_matches_the_declared_codes_and_statuses() -> None:
    declared = declared_codes()
    assert set(problems.STATUS) == set(problems.TITLES) == set(declared)
    for code, meaning in declared.items():
        # Each meaning starts with the HTTP status the server answers it with.
        assert meaning.startswith(f"{problems.STATUS[code]}. "), (code, meaning)


def test_failure_codes_the_server_stores_are_declared() -> None:
    spec = yaml.load(Path(REPO / "openapi.yaml").read_text(), Loader=yaml.CSafeLoader)
    failure = spec["components"]["schemas"]["TaskFailure"]["properties"]["code"]
    stored = {v for k, v in vars(attempts).items() if k.endswith("_CODE")}
    assert stored == {"worker_error", "manual", "lease_expired", "worker_lost"}
    assert stored <= set(failure["x-orch8-failure-codes"])
