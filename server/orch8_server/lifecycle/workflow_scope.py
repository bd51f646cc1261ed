"""What a template or condition of one block run can read (P-WF-12).

Roots: `context.data` (= `data` = `input`, the instance input), `context.config`
(= `config`), `steps.<id>` ({output, error, status} of the block's record as seen from this
run: the same iteration first, then the enclosing ones), `outputs.<id>` (= its output),
`instance_id`, and inside loop and for_each bodies `iteration` and the for_each's
`item_var`; `error` in catch and finally lists, fallbacks and on_error. A path with no
value raises KeyError (the expression reads null; a template fails the step).
"""

from __future__ import annotations

from typing import Any, Protocol

from orch8_server.lifecycle.workflow_tree import Tree


class Records(Protocol):
    """What a scope reads of the instance's machine (workflow_steps.Machine)."""

    inst: Any
    tree: Tree

    @property
    def state(self) -> dict[str, Any]: ...
    def record_at(self, key: str) -> dict[str, Any] | None: ...
    def find(self, block_id: str, scope: str) -> dict[str, Any] | None: ...


_MISSING = object()


def walk(value: Any, rest: tuple[Any, ...]) -> Any:
    for part in rest:
        if isinstance(value, dict) and str(part) in value:
            value = value[str(part)]
        elif isinstance(value, list) and not isinstance(part, bool):
            try:
                i = int(part)
            except (TypeError, ValueError):
                raise KeyError(part) from None
            if not 0 <= i < len(value):
                raise KeyError(part)
            value = value[i]
        else:
            raise KeyError(part)
    return value


def _iteration_of(scope: str) -> tuple[str, int] | None:
    """The loop key and index of the innermost iteration of `scope` ("a[1]/b[2]/")."""
    if not scope:
        return None
    head, _, last = scope.rstrip("/").rpartition("/")
    name, _, index = last.partition("[")
    return (f"{head}/{name}" if head else name), int(index.rstrip("]"))


class Scope:
    __slots__ = ("error", "loop_next", "machine", "rec", "scope")

    def __init__(
        self, machine: Records, rec: dict[str, Any], error: Any, loop_next: int | None
    ) -> None:
        """`loop_next`: for a loop's condition, the index of the iteration it decides on
        (`iteration` reads it; `steps.<id>` sees the previous iteration's blocks)."""
        self.machine = machine
        self.rec = rec
        self.error = error
        self.loop_next = loop_next
        key: str = rec["key"]
        self.scope = key[: len(key) - len(rec["id"])]

    def lookup(self, path: tuple[Any, ...]) -> Any:
        root, rest = path[0], path[1:]
        inst = self.machine.inst
        if root in ("data", "input"):
            return walk(inst["input"], rest)
        if root == "config":
            return walk(self.machine.state.get("config") or {}, rest)
        if root == "context":
            if not rest or rest[0] not in ("data", "config"):
                raise KeyError(root)
            return self.lookup((rest[0], *rest[1:]))
        if root == "instance_id":
            return walk(inst["id"], rest)
        if root in ("steps", "outputs"):
            return self._block(root, rest)
        if root == "error":
            found = self._error()
            if found is _MISSING:
                raise KeyError(root)
            return walk(found, rest)
        return walk(self._variable(root), rest)

    def _block(self, root: str, rest: tuple[Any, ...]) -> Any:
        if not rest:
            raise KeyError(root)
        block_id, rest = str(rest[0]), rest[1:]
        rec = None
        if self.loop_next:  # a loop's condition sees its last iteration's blocks
            rec = self.machine.record_at(f"{self.rec['key']}[{self.loop_next - 1}]/{block_id}")
        if rec is None:
            rec = self.machine.find(block_id, self.scope)
        if rec is None:
            raise KeyError(block_id)
        if root == "outputs":
            rest = ("output", *rest)
        if not rest:
            view = {"status": rec["status"], "error": rec["error"]}
            if rec["status"] == "completed":
                view["output"] = rec["output"]
            return view
        field, rest = rest[0], rest[1:]
        if field == "output" and rec["status"] == "completed":
            return walk(rec["output"], rest)
        if field == "error" and rec["error"] is not None:
            return walk(rec["error"], rest)
        if field == "status":
            return walk(rec["status"], rest)
        raise KeyError(field)

    def _error(self) -> Any:
        if self.error is not None:
            return self.error
        node = self.rec
        while node.get("group") is not None:
            container = self.machine.record_at(node["group"])
            if container is None:
                break
            caught = container.get("internal", {}).get("caught")
            if container["type"] == "try_catch" and node["lane"] in ("catch", "finally") \
                    and caught is not None:  # fmt: skip
                return caught
            node = container
        return _MISSING

    def _variable(self, root: str) -> Any:
        """`iteration` and item variables, from the innermost iteration outwards."""
        if root == "iteration" and self.loop_next is not None:
            return self.loop_next
        scope = self.scope
        while (found := _iteration_of(scope)) is not None:
            loop_key, index = found
            loop = self.machine.record_at(loop_key)
            if loop is not None:
                if root == "iteration":
                    return index
                block = self.machine.tree.blocks[loop["id"]]
                if block.type == "for_each" and block.item_var == root:
                    return loop.get("internal", {}).get("items", [])[index]
            scope = loop_key[: loop_key.rfind("/") + 1]
        raise KeyError(root)
