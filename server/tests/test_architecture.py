"""The server core's shape (issue 29), checked on the source: no import cycle inside
lifecycle/ (nor between auth and keys), no rule that receives the engine, no counter,
history write, telemetry or wake-up outside the effects module, and no background asyncio
task without an owner that awaits it.

Every import counts, including those under `if TYPE_CHECKING:` and inside functions: a
cycle hidden that way is still a cycle a reader has to untangle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import orch8_server

PACKAGE = Path(orch8_server.__file__).parent
LIFECYCLE = PACKAGE / "lifecycle"


def imports_of(path: Path) -> set[str]:
    """Every orch8_server module `path` imports, anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("orch8_server.")}


def module_graph(paths: list[Path]) -> dict[str, set[str]]:
    names = {
        f"orch8_server.{p.relative_to(PACKAGE).with_suffix('').as_posix().replace('/', '.')}": p
        for p in paths
    }
    return {name: imports_of(path) & names.keys() for name, path in names.items()}


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle in `graph` as a path of nodes, or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for nxt in sorted(graph.get(node, ())):
            if nxt != node and (found := visit(nxt, [*path, node])):
                return found
        done.add(node)
        return None

    for start in sorted(graph):
        if found := visit(start, []):
            return found
    return None


def test_cycle_finder_sees_a_cycle_through_type_checking_imports(tmp_path: Path) -> None:
    # What engine.py and leases.py looked like before the composition root.
    a = tmp_path / "a.py"
    b = tmp_path / "b.py"
    a.write_text("from orch8_server.b import B\n")
    b.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from orch8_server.a import A\n"
    )
    graph = {"orch8_server.a": imports_of(a), "orch8_server.b": imports_of(b)}
    graph = {k: v & graph.keys() for k, v in graph.items()}
    assert cycle(graph) == ["orch8_server.a", "orch8_server.b", "orch8_server.a"]


def test_no_import_cycle_inside_lifecycle() -> None:
    graph = module_graph(sorted(LIFECYCLE.glob("*.py")))
    found = cycle(graph)
    assert found is None, f"lifecycle import cycle: {' -> '.join(found or [])}"


def test_no_import_cycle_between_auth_and_keys() -> None:
    graph = module_graph([PACKAGE / "auth.py", PACKAGE / "keys.py", PACKAGE / "principal.py"])
    found = cycle(graph)
    assert found is None, f"import cycle: {' -> '.join(found or [])}"


def _source(path: Path) -> str:
    return path.read_text()


def test_no_rule_receives_the_engine() -> None:
    """Only the composition root builds the engine and only the engine module defines it;
    a rule gets the collaborators it uses (compose.py)."""
    offenders = [
        p.name
        for p in LIFECYCLE.glob("*.py")
        if p.name not in ("engine.py", "compose.py") and "Engine" in _source(p)
    ]
    assert offenders == []


# What only the effects module may do (lifecycle/effects.py): task counters, queue
# history, task telemetry, wake-ups of parked polls and of the scheduled-task timer, and
# freed capped slots. `metrics.problems` (request problems) is not a task counter.
TASK_COUNTERS = {"enqueued", "claimed", "completed", "failed", "requeued", "cancelled",
                 "reaped", "expired"}  # fmt: skip
EFFECT_CALLS = {
    ("history", "enqueued"), ("history", "claimed"), ("history", "completed"),
    ("history", "failed"), ("history", "finished"), ("observe", "enqueued"),
    ("observe", "claimed"), ("observe", "completed"), ("observe", "failed"),
    ("dispatcher", "wake"), ("dispatcher", "schedule"), ("controls", "freed"),
}  # fmt: skip


def effect_writes(source: str) -> list[str]:
    """`metrics.<task counter>` uses and `<history|observe|dispatcher|controls>.<call>`
    calls in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
        if name == "metrics" and node.attr in TASK_COUNTERS:
            found.append(f"metrics.{node.attr}")
        elif (name, node.attr) in EFFECT_CALLS:
            found.append(f"{name}.{node.attr}")
    return found


def test_effect_finder_sees_a_counter_and_a_wake_up() -> None:
    source = (
        "def f(self, row):\n"
        "    self.engine.metrics.cancelled.labels('t', 'q', 'h').inc()\n"
        "    self.dispatcher.wake('q')\n"
    )
    assert sorted(effect_writes(source)) == ["dispatcher.wake", "metrics.cancelled"]


def test_counters_wake_ups_and_history_are_written_by_the_effects_module_only() -> None:
    # controls.py wakes polls when an operator resumes a queue or raises a cap: those
    # are control changes (P-CTRL-1/2), not task changes, and belong to the controls.
    # compose.py hands `dispatcher.wake` to the storage: other replicas' effects, relayed.
    allowed = {"controls.py": {"dispatcher.wake"}, "compose.py": {"dispatcher.wake"}}
    # The effects module, and the observers themselves.
    skipped = {"effects.py", "metrics.py", "observe.py", "history.py", "dispatcher.py"}
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in skipped:
            continue
        found = [f for f in effect_writes(_source(path)) if f not in allowed.get(path.name, ())]
        if found:
            offenders[str(path.relative_to(PACKAGE))] = found
    assert offenders == {}


def test_every_background_task_has_an_owner() -> None:
    """`create_task` / `ensure_future` only where the task is kept and awaited: the
    service base, the dispatcher's promotion timer, the engine's connecting loop, a
    poll's waits (cancelled in its `finally`), SQLite's group committer (every
    transaction of the group awaits the commit it resolves). PostgreSQL's LISTEN loop is
    a service."""
    owners = {"services.py", "dispatcher.py", "engine.py", "leases.py", "sqlite.py"}
    spawners = {
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if ("create_task(" in _source(p) or "ensure_future(" in _source(p))
    }
    assert {Path(s).name for s in spawners} <= owners, sorted(spawners)
