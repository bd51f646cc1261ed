"""Layering of the lifecycle rules: no two rule objects call each other (issue 15, item 3).

The engine's rule objects (tasks, leases, workers, reaper) may use one another in one
direction only; shared steps live in their own module (reclaim.py for P-LEASE-6 and
P-WORKER-5). A cycle (Workers calling the reaper's reclaim while the reaper sweeps dead
workers) is what this catches: each module's `engine.<part>` references form a graph that
must have no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import orch8_server.lifecycle

LIFECYCLE = Path(orch8_server.lifecycle.__file__).parent
PARTS = ("tasks", "leases", "workers", "reaper")


def uses(source: str) -> set[str]:
    """The rule objects a module reaches through the engine (`engine.workers`, ...)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in PARTS:
            base = node.value
            name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
            if name == "engine":
                found.add(node.attr)
    return found


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle in `graph` as a path of nodes, or None."""

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        for nxt in sorted(graph.get(node, ())):
            if nxt != node and (found := visit(nxt, [*path, node])):
                return found
        return None

    for start in graph:
        if found := visit(start, []):
            return found
    return None


def test_cycle_finder_sees_the_workers_reaper_loop() -> None:
    # What the modules looked like before reclaim.py: each called the other.
    workers = "async def f(self):\n    await self.engine.reaper.reclaim()\n"
    reaper = "async def g(engine):\n    await engine.workers.sweep_dead(0)\n"
    assert cycle({"workers": uses(workers), "reaper": uses(reaper)}) == [
        "workers",
        "reaper",
        "workers",
    ]


def test_lifecycle_rule_objects_do_not_call_each_other_in_a_loop() -> None:
    graph = {part: uses((LIFECYCLE / f"{part}.py").read_text()) for part in PARTS}
    assert cycle(graph) is None, f"lifecycle call loop: {' -> '.join(cycle(graph) or [])}"
