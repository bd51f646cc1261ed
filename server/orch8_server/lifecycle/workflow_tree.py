"""A sequence definition compiled into a tree of blocks (P-WF-3, P-WF-11, P-WF-12).

One internal model for both forms a sequence may be written in: Orch8's `blocks`, and the
1.x `steps` (a step is a `step` block; `{id, parallel: [steps]}` is a `parallel` block
whose every child is its own branch). Compiling checks what the schema cannot say (a type's
fields, unique ids, expressions and templates that parse, references only to blocks that
have run, the limits) and parses every expression and template once, so running an
instance only evaluates. A compiled tree is immutable and cached per sequence version.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from orch8_server.lifecycle import expressions as ex
from orch8_server.lifecycle.workflow_render import Renderer, compile_params

SLEEP = "sleep"  # the built-in handler: a timer, never dispatched (P-WF-3)
ON_ERROR = "on_error"  # the record (and the task context step_id) of the on_error step
# P-WF-1: ids the engine gives its own records; a block may not take them.
RESERVED_IDS = frozenset({ON_ERROR})
MAX_SLEEP_MS = 31_536_000_000
MAX_DEPTH = 64
MAX_BLOCKS = 5000
DEFAULT_MAX_ITERATIONS = 1000
CONTAINERS = ("parallel", "race", "router", "try_catch", "loop", "for_each")
ITERATING = ("loop", "for_each")
_COMMON = {"id", "type"}
FIELDS: dict[str, set[str]] = {
    "step": {
        "handler",
        "params",
        "queue_name",
        "priority",
        "retry",
        "fallback",
        "headers",
        "concurrency_key",
        "max_concurrency",
        "rate_limit_key",
    },
    "parallel": {"branches"},
    "race": {"branches", "semantics"},
    "router": {"routes", "default"},
    "try_catch": {"try_block", "catch_block", "finally_block"},
    "loop": {"condition", "max_iterations", "body"},
    "for_each": {"collection", "item_var", "max_iterations", "body"},
    "sub_sequence": {"sequence_name", "version", "input"},
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "step": ("handler",), "parallel": ("branches",), "race": ("branches",),
    "router": ("routes",), "try_catch": ("try_block", "catch_block"),
    "loop": ("condition", "body"), "for_each": ("collection", "body"),
    "sub_sequence": ("sequence_name",),
}  # fmt: skip
ROOTS = ("context", "data", "config", "input", "steps", "outputs", "instance_id")


MAX_ERRORS = 100


class _TooMany(Exception):
    pass


class DefinitionError(ValueError):
    def __init__(self, errors: list[dict[str, str]]) -> None:
        super().__init__(errors[0]["detail"])
        self.errors = errors


@dataclass(eq=False)
class Block:
    id: str
    type: str
    spec: dict[str, Any]
    parent: str | None  # the container's id
    lane: str | None  # its list in the container: branch:<i>, route:<i>, default, try, ...
    index: int  # position in that list
    pointer: str
    lanes: dict[str, list[str]] = field(default_factory=dict)  # container: lane -> ids
    params: Renderer | None = None  # step params, sub_sequence input
    key: Renderer | None = None  # a step's concurrency_key (P-KEY-5)
    rate_key: Renderer | None = None  # a step's rate_limit_key (P-RATE-5)
    fallback_params: Renderer | None = None
    condition: ex.Expr | None = None  # loop
    routes: list[ex.Expr] = field(default_factory=list)  # router
    collection: ex.Expr | None = None  # for_each
    item_var: str = "item"
    max_iterations: int = DEFAULT_MAX_ITERATIONS


@dataclass(eq=False)
class Tree:
    root: list[str]
    blocks: dict[str, Block]
    on_error: dict[str, Any] | None
    on_error_params: Renderer | None

    def lane(self, container: str | None, lane: str | None) -> list[str]:
        if container is None:
            return self.root
        return self.blocks[container].lanes[
            "body" if lane and lane.startswith("iteration:") else lane or ""
        ]

    def preorder(self) -> list[Block]:
        """Every block outside loop bodies, containers before their contents (P-WF-10)."""
        out: list[Block] = []

        def walk(ids: list[str]) -> None:
            for bid in ids:
                block = self.blocks[bid]
                out.append(block)
                if block.type not in ITERATING:
                    for lane_ids in block.lanes.values():
                        walk(lane_ids)

        walk(self.root)
        return out


def block_type(spec: dict[str, Any]) -> str | None:
    if "type" in spec:
        return str(spec["type"])
    if "handler" in spec:
        return "step"
    if "parallel" in spec:
        return "parallel"
    return None


class TreeCache:
    """Compiled trees of stored sequence versions (rows never change), most recent kept."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._trees: OrderedDict[tuple[Any, ...], Tree] = OrderedDict()

    def get(self, key: tuple[Any, ...], definition: dict[str, Any]) -> Tree:
        tree = self._trees.get(key)
        if tree is None:
            tree = compile_definition(definition, templates=definition.get("model", 1) >= 2)
            self._trees[key] = tree
            if len(self._trees) > self.size:
                self._trees.popitem(last=False)
        else:
            self._trees.move_to_end(key)
        return tree


def compile_definition(definition: dict[str, Any], templates: bool = True) -> Tree:
    """The tree of a definition {blocks|steps, on_error}; DefinitionError lists every
    problem with its JSON pointer. `templates` is False for definitions stored before
    templates existed (1.x): their strings are passed on as written."""
    return _Compiler(definition, templates).run()


class _Compiler:
    def __init__(self, definition: dict[str, Any], templates: bool) -> None:
        self.definition = definition
        self.templates = templates
        self.key = "blocks" if "blocks" in definition else "steps"
        self.errors: list[dict[str, str]] = []
        self.blocks: dict[str, Block] = {}
        self.count = 0
        self._paths: dict[str, dict[str | None, tuple[str | None, int]]] = {}
        self.root: list[str] = []

    def err(self, pointer: str, detail: str) -> None:
        self.errors.append({"pointer": pointer, "detail": detail})
        if len(self.errors) >= MAX_ERRORS:  # a huge bad definition answers fast
            raise _TooMany

    def run(self) -> Tree:
        try:
            return self._run()
        except _TooMany:
            self.errors.append({"pointer": "", "detail": f"more errors not listed (the first "
                                f"{MAX_ERRORS} are)"})  # fmt: skip
            raise DefinitionError(self.errors) from None

    def _run(self) -> Tree:
        root = self.root = self.walk(self.definition[self.key], f"/{self.key}", None, None, 1)
        if self.count > MAX_BLOCKS:
            self.err(f"/{self.key}", f"has {self.count} blocks, more than {MAX_BLOCKS}")
        if not self.errors:
            for block in list(self.blocks.values()):
                self.check_block(block)
        on_error = self.definition.get("on_error")
        on_error_params = None
        if on_error is not None:
            on_error_params = self.renderer(
                on_error.get("params", {}), "/on_error/params", None, ("error",)
            )
            self.check_sleep(on_error, "/on_error")
        if self.errors:
            raise DefinitionError(self.errors)
        return Tree(root, self.blocks, on_error, on_error_params)

    # Structure ------------------------------------------------------------------------

    def walk(
        self, specs: list[Any], ptr: str, parent: str | None, lane: str | None, depth: int,
        single: bool = False,
    ) -> list[str]:  # fmt: skip
        """`single`: `specs` is one 1.x group child, at `ptr` itself."""
        ids: list[str] = []
        for i, spec in enumerate(specs):
            bptr = ptr if single else f"{ptr}/{i}"
            self.count += 1
            if depth > MAX_DEPTH:
                self.err(bptr, f"blocks nest deeper than {MAX_DEPTH} levels")
                continue
            bid = spec["id"]
            if bid in RESERVED_IDS and self.templates:  # 1.x definitions stored before it
                self.err(f"{bptr}/id", f"{bid} is reserved (the sequence's on_error step uses "
                         "it); choose another id")  # fmt: skip
            elif bid in self.blocks:
                self.err(f"{bptr}/id", f"block id {bid} is used twice")
                continue
            kind = block_type(spec)
            if kind is None:
                self.err(bptr, "needs a type (or a handler)")
                continue
            block = Block(bid, kind, spec, parent, lane, i, bptr)
            self.blocks[bid] = block
            ids.append(bid)
            self.fields(block)
            self.children(block, depth)
        return ids

    def fields(self, block: Block) -> None:
        spec, kind, ptr = block.spec, block.type, block.pointer
        allowed = _COMMON | FIELDS[kind]
        legacy = kind == "parallel" and "type" not in spec
        if legacy:
            allowed = (allowed - {"branches"}) | {"parallel"}
        for name in spec:
            if name not in allowed:
                where = "a 1.x parallel group" if legacy else f"a {kind} block"
                self.err(f"{ptr}/{name}", f"not allowed on {where}")
        for name in ("parallel",) if legacy else REQUIRED[kind]:
            if name not in spec:
                self.err(ptr, f"a {kind} block needs {name}")

    def children(self, block: Block, depth: int) -> None:
        spec, ptr, kind = block.spec, block.pointer, block.type
        lanes: dict[str, list[str]] = {}
        if kind == "parallel" and "parallel" in spec and "type" not in spec:
            for j, child in enumerate(spec["parallel"]):  # 1.x: each child its own branch
                if block_type(child) != "step" or "parallel" in child:
                    self.err(f"{ptr}/parallel/{j}", "a group child needs a handler")
                    continue
                lanes[f"branch:{j}"] = self.walk(
                    [child], f"{ptr}/parallel/{j}", block.id, f"branch:{j}", depth + 1, True
                )
        for j, branch in enumerate(spec.get("branches", [])):
            lanes[f"branch:{j}"] = self.walk(
                branch, f"{ptr}/branches/{j}", block.id, f"branch:{j}", depth + 1
            )
        for j, route in enumerate(spec.get("routes", [])):
            lanes[f"route:{j}"] = self.walk(
                route["blocks"], f"{ptr}/routes/{j}/blocks", block.id, f"route:{j}", depth + 1
            )
        for name, lane in (
            ("default", "default"),
            ("try_block", "try"),
            ("catch_block", "catch"),
            ("finally_block", "finally"),
            ("body", "body"),
        ):
            if name in spec:
                lanes[lane] = self.walk(spec[name], f"{ptr}/{name}", block.id, lane, depth + 1)
        if kind in ITERATING and "body" in spec and not spec["body"]:
            self.err(f"{ptr}/body", "needs at least one block")
        block.lanes = lanes
        block.max_iterations = int(spec.get("max_iterations", DEFAULT_MAX_ITERATIONS))
        block.item_var = str(spec.get("item_var", "item"))
        if block.item_var in (*ROOTS, "iteration", "error"):
            self.err(f"{ptr}/item_var", f"{block.item_var} is a template root; choose another name")

    # References -----------------------------------------------------------------------

    def iterated(self, block: Block) -> Block | None:
        """The innermost loop or for_each whose body holds `block`, if any."""
        while block.parent is not None:
            parent = self.blocks[block.parent]
            if parent.type in ITERATING and block.lane == "body":
                return parent
            block = parent
        return None

    def _path(self, reader: Block) -> dict[str | None, tuple[str | None, int]]:
        """For each container above `reader` (None: the top level), the lane and index of
        the reader's ancestor-or-self in it."""
        found = self._paths.get(reader.id)
        if found is None:
            found, node = {}, reader
            while True:
                found[node.parent] = (node.lane, node.index)
                if node.parent is None:
                    break
                node = self.blocks[node.parent]
            self._paths[reader.id] = found
        return found

    def unseen(self, reader: Block | None, target: Block, into_body: bool = False) -> str | None:
        """Why `target` may not have ended when `reader` starts (P-WF-12), or None. The
        reader None is on_error (after everything); `into_body`: a loop's condition, which
        also sees its own body. Costs the depth of the target, not the sequence's size."""
        loop = self.iterated(target)
        if reader is None:
            return None if loop is None else "loop"
        path, node, crossed = self._path(reader), target, False
        while True:
            parent = node.parent
            if parent == reader.id:  # the target is inside the reader
                return None if into_body and node.lane == "body" and not crossed else "later"
            if parent in path:  # the closest container holding both
                if crossed:
                    return "loop"
                lane, index = path[parent]
                if lane == node.lane and node.index < index:
                    return None
                if parent is not None and self.blocks[parent].type == "try_catch" and (
                    (lane == "catch" and node.lane == "try")
                    or (lane == "finally" and node.lane in ("try", "catch"))
                ):  # fmt: skip
                    return None
                return "later"
            assert parent is not None  # the top level is always in the path
            container = self.blocks[parent]
            if container.type in ITERATING and node.lane == "body":
                crossed = True
            node = container

    def extra_roots(self, block: Block) -> tuple[str, ...]:
        """Roots that exist only inside some blocks: loop variables and the caught error."""
        roots: list[str] = []
        node = block
        while node.parent is not None:
            parent = self.blocks[node.parent]
            if parent.type in ITERATING and node.lane == "body":
                roots.append("iteration")
                if parent.type == "for_each":
                    roots.append(parent.item_var)
            if parent.type == "try_catch" and node.lane in ("catch", "finally"):
                roots.append("error")
            node = parent
        return tuple(roots)

    def check_path(
        self, path: tuple[Any, ...], pointer: str, reader: Block | None,
        extra: tuple[str, ...], into_body: bool = False,
    ) -> None:  # fmt: skip
        root = path[0]
        if root in extra or root in ("data", "config", "input", "instance_id"):
            return
        if root == "context":
            if len(path) < 2 or path[1] not in ("data", "config"):
                self.err(pointer, "context has data and config only (context.data.x)")
            return
        if root not in ("steps", "outputs"):
            roots = ", ".join((*ROOTS, *extra))
            self.err(pointer, f"unknown root {root!r}; the roots here are {roots}")
            return
        if len(path) < 2 or not isinstance(path[1], str):
            self.err(pointer, f"{root} needs a block id ({root}.<id>)")
            return
        target = path[1]
        me = None if reader is None else reader.id
        if target == me and not into_body:
            self.err(pointer, f"block {me} cannot refer to its own output")
        elif target not in self.blocks:
            self.err(pointer, f"no block {target} in this sequence")
        else:
            why = self.unseen(reader, self.blocks[target], into_body)
            loop = self.iterated(self.blocks[target])
            if why == "loop" and loop is not None:
                self.err(pointer, f"block {target} runs inside {loop.type} {loop.id}; "
                         f"refer to steps.{loop.id}.output")  # fmt: skip
            elif why is not None:
                self.err(pointer, f"block {target} does not run before this block")

    def renderer(
        self, value: Any, pointer: str, reader: Block | None, extra: tuple[str, ...]
    ) -> Renderer | None:
        try:
            renderer, paths = compile_params(value, pointer, self.templates)
        except ex.ExpressionError as exc:
            self.err(getattr(exc, "pointer", None) or pointer, exc.message)
            return None
        except ValueError as exc:  # a malformed {"$from": ...} (P-WF-2)
            where, detail = exc.args
            self.err(where, detail)
            return None
        for path, where in paths:
            self.check_path(path, where, reader, extra)
        return renderer

    def expression(
        self, text: str, pointer: str, reader: Block, extra: tuple[str, ...],
        into_body: bool = False,
    ) -> ex.Expr | None:  # fmt: skip
        try:
            expr = ex.parse(text)
        except ex.ExpressionError as exc:
            self.err(pointer, f"{exc.message} (at character {exc.position})")
            return None
        for path in expr.paths():
            self.check_path(path, pointer, reader, extra, into_body)
        return expr

    def check_block(self, block: Block) -> None:
        spec, ptr, extra = block.spec, block.pointer, self.extra_roots(block)
        if block.type == "step":
            block.params = self.renderer(spec.get("params", {}), f"{ptr}/params", block, extra)
            if "concurrency_key" in spec:
                block.key = self.renderer(
                    spec["concurrency_key"], f"{ptr}/concurrency_key", block, extra
                )
            elif "max_concurrency" in spec:  # P-KEY-5
                self.err(f"{ptr}/max_concurrency", "max_concurrency needs a concurrency_key")
            if "rate_limit_key" in spec:
                if "concurrency_key" in spec:  # P-RATE-5
                    self.err(f"{ptr}/rate_limit_key",
                             "a step names a concurrency_key or a rate_limit_key, not both")  # fmt: skip
                block.rate_key = self.renderer(
                    spec["rate_limit_key"], f"{ptr}/rate_limit_key", block, extra
                )
            self.check_sleep(spec, ptr)
            if "fallback" in spec:
                block.fallback_params = self.renderer(
                    spec["fallback"].get("params", {}), f"{ptr}/fallback/params", block,
                    (*extra, "error"),
                )  # fmt: skip
                self.check_sleep(spec["fallback"], f"{ptr}/fallback")
        elif block.type == "sub_sequence":
            block.params = self.renderer(spec.get("input", {}), f"{ptr}/input", block, extra)
        elif block.type == "router":
            for j, route in enumerate(spec["routes"]):
                expr = self.expression(
                    route["condition"], f"{ptr}/routes/{j}/condition", block, extra
                )
                if expr is not None:
                    block.routes.append(expr)
        elif block.type == "loop":
            block.condition = self.expression(
                spec["condition"], f"{ptr}/condition", block, (*extra, "iteration"), True
            )
        elif block.type == "for_each":
            block.collection = self.expression(
                spec["collection"], f"{ptr}/collection", block, extra
            )

    def check_sleep(self, action: dict[str, Any], ptr: str) -> None:
        if action.get("handler") != SLEEP:
            return
        duration = action.get("params", {}).get("duration_ms")
        dynamic = isinstance(duration, dict) or (isinstance(duration, str) and "{{" in duration)
        if not dynamic and not (
            isinstance(duration, int) and not isinstance(duration, bool)
            and 0 <= duration <= MAX_SLEEP_MS
        ):  # fmt: skip
            self.err(
                f"{ptr}/params/duration_ms",
                f"sleep needs an integer duration_ms in 0..{MAX_SLEEP_MS}",
            )
