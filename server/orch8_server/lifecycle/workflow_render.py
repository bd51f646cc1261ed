"""Step params and sub-sequence inputs with their references filled in (P-WF-2, P-WF-12).

A value is compiled once per sequence version into a `Renderer`: the parts without a
`{"$from": ...}` reference or a `{{ template }}` are kept as they are (no copy), the rest
is a small tree of closures over parsed expressions. Rendering asks a `lookup(path)` for
each value read; a reference or template whose path has no value raises BadReference
(the step fails with `bad_reference`), while a condition reads a missing path as null.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orch8_server.lifecycle import expressions as ex

REF = "$from"
Lookup = Callable[[tuple[Any, ...]], Any]
Path = tuple[Any, ...]


class BadReference(Exception):
    """A reference or template names nothing in the instance (failure bad_reference)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


class Renderer:
    __slots__ = ("_fn", "dynamic")

    def __init__(self, fn: Callable[[Lookup], Any], dynamic: bool) -> None:
        self._fn = fn
        self.dynamic = dynamic

    def render(self, lookup: Lookup) -> Any:
        try:
            return self._fn(lookup)
        except ex.MissingValue as exc:
            raise BadReference(dotted(exc.path)) from None


def dotted(path: Path) -> str:
    return ".".join(str(p) for p in path)


def is_reference(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get(REF), str)


def _escape(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def compile_params(
    value: Any, pointer: str, templates: bool = True
) -> tuple[Renderer, list[tuple[Path, str]]]:
    """The renderer of `value` and every (path, JSON pointer) it reads. Raises
    ex.ExpressionError (with .pointer) for a malformed template and ValueError(pointer,
    detail) for a malformed reference: an object with a `$from` member must be exactly
    {"$from": "<path>"}, or the mistake would reach a worker as literal params (P-WF-2)."""
    paths: list[tuple[Path, str]] = []

    def build(node: Any, ptr: str) -> Callable[[Lookup], Any] | None:
        """None when `node` renders to itself."""
        if is_reference(node):
            path = tuple(node[REF].split("."))
            paths.append((path, ptr + "/$from"))

            def ref(lookup: Lookup, path: Path = path) -> Any:
                try:
                    return lookup(path)
                except KeyError:
                    raise BadReference(dotted(path)) from None

            return ref
        if isinstance(node, dict):
            if REF in node:
                if not isinstance(node[REF], str):
                    raise ValueError(ptr + "/$from", "must be a string path")
                raise ValueError(ptr, 'a reference must be exactly {"$from": "<path>"}, '
                                 "with no other member")  # fmt: skip
            parts = {k: build(v, f"{ptr}/{_escape(k)}") for k, v in node.items()}
            if all(p is None for p in parts.values()):
                return None
            items = [(k, p, node[k]) for k, p in parts.items()]
            return lambda lk: {k: (v if p is None else p(lk)) for k, p, v in items}
        if isinstance(node, list):
            elems = [build(v, f"{ptr}/{i}") for i, v in enumerate(node)]
            if all(p is None for p in elems):
                return None
            pairs = list(zip(elems, node, strict=True))
            return lambda lk: [v if p is None else p(lk) for p, v in pairs]
        if templates and isinstance(node, str) and "{{" in node:
            try:
                template = ex.parse_template(node)
            except ex.ExpressionError as exc:
                exc.pointer = ptr
                exc.message = f"{exc.message} (at character {exc.position})"
                raise
            if template is None:
                return None
            paths.extend((p, ptr) for p in template.paths())
            return lambda lk: template.render(lk, strict=True)
        return None

    fn = build(value, pointer)
    if fn is None:
        return Renderer(lambda _lk: value, False), paths
    return Renderer(fn, True), paths
