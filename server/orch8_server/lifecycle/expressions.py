"""Expressions and `{{ }}` templates of Orch8's block format (issue 31): the public API.

An expression (router and loop conditions, for_each collections) is parsed once at
definition into an `Expr` and evaluated per task; a path with no value reads as null.
A template string that is exactly one `{{ expr }}` renders to the expression's JSON value
(types kept); otherwise each `{{ }}` is replaced by its value as text. Templates are
strict by default: a path with no value raises MissingValue, so the step fails with
bad_reference naming the path (P-WF-2) instead of handing a worker an empty string.
The syntax is in expression_parser.py, the value semantics in expression_values.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orch8_server.lifecycle.expression_parser import (
    MAX_DEPTH,
    MAX_LENGTH,
    ExpressionError,
    Fn,
    Lookup,
    MissingValue,
    Parser,
    Path,
    lex,
)
from orch8_server.lifecycle.expression_values import EvaluationError, json_text, truthy

__all__ = [
    "MAX_DEPTH",
    "MAX_LENGTH",
    "Compiled",
    "EvaluationError",
    "Expr",
    "ExpressionError",
    "Lookup",
    "MissingValue",
    "Path",
    "Template",
    "compile_value",
    "parse",
    "parse_template",
    "truthy",
]


class Expr:
    """A parsed expression: evaluate it as often as needed, with no parsing."""

    def __init__(self, text: str, fn: Fn, paths: list[Path]) -> None:
        self.text = text
        self._fn = fn
        self._paths = paths

    def evaluate(self, lookup: Lookup) -> Any:
        """The value; a path whose lookup raises KeyError reads as null."""
        return self._fn(lookup)

    def paths(self) -> list[Path]:
        """Every path the expression reads, in the order written."""
        return list(self._paths)

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"


def parse(text: str) -> Expr:
    """Parse an expression once, at definition; ExpressionError when malformed."""
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters", MAX_LENGTH)
    tokens, _ = lex(text, 0, template=False)
    parser = Parser(tokens, template=False)
    return Expr(text, parser.parse(), parser.paths)


OPEN = "{{"


class Template:
    """A parsed template string; `whole` when it is exactly one `{{ expr }}`."""

    def __init__(self, text: str, parts: list[str | Fn], paths: list[Path]) -> None:
        self.text = text
        self.whole = len(parts) == 1 and not isinstance(parts[0], str)
        self._parts = parts
        self._paths = paths

    def render(self, lookup: Lookup, *, strict: bool = True) -> Any:
        """The whole expression's value, or the text with every `{{ }}` replaced."""
        return self.render_with(_strict(lookup) if strict else lookup)

    def render_with(self, lookup: Lookup) -> Any:
        """render() with a lookup already made strict (or not) by the caller."""
        if self.whole:
            return self._parts[0](lookup)  # type: ignore[operator]  # whole: one Fn
        return "".join(
            part if isinstance(part, str) else _text(part(lookup)) for part in self._parts
        )

    def paths(self) -> list[Path]:
        """Every path the template reads, in the order written."""
        return list(self._paths)

    def __repr__(self) -> str:
        return f"Template({self.text!r})"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else json_text(value)


def _strict(lookup: Lookup) -> Lookup:
    def strict(path: Path) -> Any:
        try:
            return lookup(path)
        except KeyError:
            raise MissingValue(path) from None

    return strict


def parse_template(text: str) -> Template | None:
    """None when the string holds no `{{`; ExpressionError (position within the text) when a
    `{{ }}` is malformed or unclosed. A literal `{{` is written `{{ "{{" }}`."""
    start = text.find(OPEN)
    if start < 0:
        return None
    parts: list[str | Fn] = []
    paths: list[Path] = []
    end = 0
    while start >= 0:
        if start > end:
            parts.append(text[end:start])
        tokens, end = lex(text, start + len(OPEN), template=True)
        parser = Parser(tokens, template=True)
        parts.append(parser.parse())
        paths += parser.paths
        start = text.find(OPEN, end)
    if end < len(text):
        parts.append(text[end:])
    return Template(text, parts, paths)


class Compiled:
    """A JSON value with every template string in it parsed, ready to render per task."""

    def __init__(self, value: Any, fn: Fn | None, paths: list[tuple[Path, str]]) -> None:
        self._value = value
        self._fn = fn
        self._paths = paths

    def render(self, lookup: Lookup, *, strict: bool = True) -> Any:
        """A new value with every template rendered; parts without templates are shared,
        not copied, and a value without templates is returned as it is."""
        if self._fn is None:
            return self._value
        return self._fn(_strict(lookup) if strict else lookup)

    def paths(self) -> list[tuple[Path, str]]:
        """(path, JSON pointer of the template string) for every path read, in order."""
        return list(self._paths)


def compile_value(value: Any) -> Compiled:
    """Find and parse every template string inside a JSON value; an ExpressionError carries
    `.pointer`, the RFC 6901 pointer of the bad string within `value`."""
    paths: list[tuple[Path, str]] = []
    return Compiled(value, _compile(value, "", paths), paths)


def _compile(value: Any, pointer: str, paths: list[tuple[Path, str]]) -> Fn | None:
    """A function building the rendered value, or None when `value` holds no template."""
    if isinstance(value, str):
        try:
            template = parse_template(value)
        except ExpressionError as exc:
            exc.pointer = pointer
            raise
        if template is None:
            return None
        paths += [(path, pointer) for path in template.paths()]
        return template.render_with
    if isinstance(value, dict):
        members = {
            key: _compile(item, f"{pointer}/{_escape(str(key))}", paths)
            for key, item in value.items()
        }
        return _rebuild(value, {key: fn for key, fn in members.items() if fn is not None})
    if isinstance(value, list):
        items = {i: _compile(item, f"{pointer}/{i}", paths) for i, item in enumerate(value)}
        return _rebuild(value, {i: fn for i, fn in items.items() if fn is not None})
    return None


def _rebuild(container: Any, dynamic: dict[Any, Fn]) -> Fn | None:
    if not dynamic:
        return None
    copy: Callable[[Any], Any] = dict if isinstance(container, dict) else list

    def render(lookup: Lookup) -> Any:
        out = copy(container)
        for key, fn in dynamic.items():
            out[key] = fn(lookup)
        return out

    return render


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
