"""The syntax of Orch8's expressions: tokens, then a Pratt parser building closures.

The parser runs once per definition; what it returns is a tree of small closures that
evaluate with no parsing, regex or `eval`. Values are read only through the caller's
`lookup(path)`, so an expression cannot reach Python attributes, call methods or assign.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn

from orch8_server.lifecycle.expression_values import (
    ARITHMETIC,
    COMPARISONS,
    FUNCTIONS,
    INT_MAX,
    INT_MIN,
    EvaluationError,
    in_range,
    is_number,
    truthy,
    type_name,
)

Path = tuple[str | int, ...]
Lookup = Callable[[Path], Any]
Fn = Callable[[Lookup], Any]

MAX_LENGTH = 4096
MAX_DEPTH = 64


class ExpressionError(ValueError):
    """Malformed at definition: `.message`, `.position` (0-based offset into the text)."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} (at position {position})")
        self.message = message
        self.position = position
        self.pointer: str | None = None  # set by compile_value: where the bad string is


class MissingValue(KeyError):
    """A strict template read a path with no value (failure code bad_reference, P-WF-2)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.path = path


class _Token(NamedTuple):
    kind: str  # "num", "str", "name", "op" or "end"
    value: Any
    pos: int


# One match per token, after optional JSON whitespace; no group matched = a bad character.
_TOKEN = re.compile(
    r"""[ \t\r\n]*(?:
      (?P<num>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<op>==|!=|<=|>=|&&|\|\||}}|[-+*/%<>!?:,.()\[\]])
    )?""",
    re.VERBOSE | re.DOTALL,
)
_DIGITS = re.compile(r"[0-9]+")
_BAD_CHARS = {
    "=": "expected '==' (expressions cannot assign)",
    "&": "expected '&&'",
    "'": "strings are written in double quotes",
    '"': "unclosed string: expected '\"'",
}
PIPE_REFUSED = "template filters (|) are not supported"


def lex(text: str, start: int, template: bool) -> tuple[list[_Token], int]:
    """Tokens from `start` to the end of the text, or (template) to the first `}}`
    outside a string; returns them and the offset after the last one."""
    tokens: list[_Token] = []
    pos = start
    while True:
        match = _TOKEN.match(text, pos)
        assert match is not None  # every part of the pattern is optional
        kind, value, pos = match.lastgroup, match.group(match.lastgroup or 0), match.end()
        at = match.start(kind) if kind else pos
        if at - start > MAX_LENGTH:
            raise ExpressionError(f"expression longer than {MAX_LENGTH} characters", at)
        if kind == "num":
            if tokens and tokens[-1].kind == "op" and tokens[-1].value == ".":
                # `items.0.1` is two path segments, not the number 0.1
                pos = _DIGITS.match(text, at).end()  # type: ignore[union-attr]
                value = text[at:pos]
            tokens.append(_Token("num", _number_literal(value, at), at))
        elif kind == "str":
            tokens.append(_Token("str", _string_literal(value, at), at))
        elif kind == "name" or (kind == "op" and value != "}}"):
            tokens.append(_Token(kind, value, at))
        elif kind == "op" and template:
            tokens.append(_Token("end", None, at))
            return tokens, pos
        elif pos < len(text) or kind == "op":
            char = text[at]
            if char == "|":
                raise ExpressionError(PIPE_REFUSED if template else "expected '||'", at)
            raise ExpressionError(_BAD_CHARS.get(char, f"unexpected character {char!r}"), at)
        elif template:
            raise ExpressionError("unclosed '{{': expected '}}'", start - 2)
        else:
            tokens.append(_Token("end", None, pos))
            return tokens, pos


def _number_literal(digits: str, pos: int) -> int | float:
    if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
        raise ExpressionError("a number cannot start with 0", pos)
    if "." in digits or "e" in digits or "E" in digits:
        value = float(digits)
        if not math.isfinite(value):
            raise ExpressionError("number out of range", pos)
        return value
    if len(digits) > 20 or int(digits) > INT_MAX:
        raise ExpressionError("integer out of the 64-bit range", pos)
    return int(digits)


def _string_literal(quoted: str, pos: int) -> str:
    try:
        value: str = json.loads(quoted)
        value.encode("utf-8")
    except json.JSONDecodeError as exc:
        raise ExpressionError(f"invalid string: {exc.msg}", pos + exc.pos) from None
    except UnicodeEncodeError:
        raise ExpressionError("invalid string: unpaired surrogate escape", pos) from None
    return value


_TERNARY, _OR, _AND, _COMPARE, _ADD, _MUL, _UNARY = range(1, 8)
_BINDING = {"||": _OR, "&&": _AND, "+": _ADD, "-": _ADD, "*": _MUL, "/": _MUL, "%": _MUL}
_BINDING.update(dict.fromkeys(COMPARISONS, _COMPARE))
_LITERALS = {"true": True, "false": False, "null": None}


class Parser:
    """Pratt parser from tokens to closures. Chains of one precedence level (`a + b - c`,
    `a && b && c`) become one closure looping over its operands, so a long chain cannot
    exhaust Python's stack; anything nested counts towards MAX_DEPTH."""

    def __init__(self, tokens: list[_Token], template: bool) -> None:
        self._tokens = tokens
        self._at = 0
        self._depth = 0
        self._template = template
        self.paths: list[Path] = []

    def parse(self) -> Fn:
        if self._peek().kind == "end":
            self._fail("expected an expression")
        fn = self._expr(_TERNARY)
        if self._peek().kind != "end":
            self._fail("expected an operator or the end of the expression")
        return fn

    def _peek(self) -> _Token:
        return self._tokens[self._at]

    def _next(self) -> _Token:
        token = self._tokens[self._at]
        self._at += 1
        return token

    def _op(self) -> str | None:
        token = self._peek()
        if token.kind == "op" or (token.kind == "name" and token.value == "in"):
            return str(token.value)
        return None

    def _fail(self, expected: str, token: _Token | None = None) -> NoReturn:
        token = token or self._peek()
        if token.kind == "end":
            found = "'}}'" if self._template else "the end of the expression"
        else:
            found = repr(token.value) if token.kind == "str" else f"'{token.value}'"
        raise ExpressionError(f"{expected}, found {found}", token.pos)

    def _expect(self, op: str, why: str) -> None:
        if self._op() != op:
            self._fail(f"expected '{op}' {why}")
        self._at += 1

    def _expr(self, min_binding: int) -> Fn:
        self._depth += 1
        if self._depth > MAX_DEPTH + 1:  # the outermost expression is not nested
            opener = self._tokens[self._at - 1]  # the operator or bracket one level too deep
            raise ExpressionError(
                f"expression nested more than {MAX_DEPTH} levels deep", opener.pos
            )
        left = self._prefix()
        while (op := self._op()) is not None:
            if op == "?" and min_binding <= _TERNARY:
                self._at += 1
                yes = self._expr(_TERNARY)
                self._expect(":", "between the branches of '?'")
                left = _choice(left, yes, self._expr(_TERNARY))
                continue
            binding = _BINDING.get(op, 0)
            if binding < min_binding or binding == 0:
                break
            if binding == _COMPARE:
                self._at += 1
                left = _compare(COMPARISONS[op], left, self._expr(_COMPARE + 1))
                if _BINDING.get(self._op() or "") == _COMPARE:
                    self._fail("comparisons cannot be chained; join them with && or ||")
                continue
            operands = [left]
            ops: list[str] = []
            while (op := self._op()) is not None and _BINDING.get(op) == binding:
                self._at += 1
                ops.append(op)
                operands.append(self._expr(binding + 1))
            if binding in (_AND, _OR):
                left = _logic(binding == _AND, operands)
            else:
                left = _arithmetic(operands, ops)
        self._depth -= 1
        return left

    def _prefix(self) -> Fn:
        token = self._next()
        if token.kind in ("num", "str"):
            return _constant(token.value)
        if token.kind == "name":
            if token.value in _LITERALS:
                return _constant(_LITERALS[token.value])
            if token.value != "in":
                if self._op() == "(":
                    return self._call(token)
                return self._path(token)
        op = token.value if token.kind == "op" else None
        if op == "(":
            inner = self._expr(_TERNARY)
            self._expect(")", "to close '('")
            return inner
        if op == "[":
            return self._array()
        if op == "-" and self._peek().kind == "num":
            number = self._next()
            if isinstance(number.value, int) and -number.value < INT_MIN:
                raise ExpressionError("integer out of the 64-bit range", number.pos)
            return _constant(-number.value)
        if op in ("!", "-"):
            operand = self._expr(_UNARY)
            return _not(operand) if op == "!" else _negate(operand)
        self._at -= 1
        self._fail("expected a value")

    def _array(self) -> Fn:
        items: list[Fn] = []
        if self._op() != "]":
            items.append(self._expr(_TERNARY))
            while self._op() == ",":
                self._at += 1
                items.append(self._expr(_TERNARY))
        self._expect("]", "or ',' in the array")
        return lambda lookup: [item(lookup) for item in items]

    def _call(self, name: _Token) -> Fn:
        function = FUNCTIONS.get(name.value)
        if function is None:
            known = ", ".join(sorted(FUNCTIONS))
            raise ExpressionError(
                f"unknown function '{name.value}': expected one of {known}", name.pos
            )
        self._at += 1
        argument = self._expr(_TERNARY)
        self._expect(")", f"after the one argument of {name.value}()")
        return lambda lookup: function(argument(lookup))

    def _path(self, root: _Token) -> Fn:
        segments: list[str | int] = [root.value]
        while (op := self._op()) in (".", "["):
            self._at += 1
            token = self._next()
            if op == "." and token.kind in ("name", "num"):
                segments.append(token.value)
            elif op == "[" and (token.kind == "str" or _is_index(token)):
                segments.append(token.value)
                self._expect("]", "after the index")
            else:
                what = "a name or an index" if op == "." else "a string or an index (0, 1, ...)"
                self._fail(f"expected {what} after '{op}'", token)
        if self._op() == "(":
            self._fail(f"only the functions {', '.join(sorted(FUNCTIONS))} can be called")
        path = tuple(segments)
        self.paths.append(path)
        return _reader(path)


def _is_index(token: _Token) -> bool:
    return token.kind == "num" and isinstance(token.value, int)


def _constant(value: Any) -> Fn:
    return lambda _lookup: value


def _reader(path: Path) -> Fn:
    def read(lookup: Lookup) -> Any:
        try:
            return lookup(path)
        except MissingValue:
            raise
        except KeyError:
            return None

    return read


def _not(operand: Fn) -> Fn:
    return lambda lookup: not truthy(operand(lookup))


def _negate(operand: Fn) -> Fn:
    def negate(lookup: Lookup) -> Any:
        value = operand(lookup)
        if not is_number(value):
            raise EvaluationError(f"'-' needs a number, found {type_name(value)}")
        return in_range(-value)

    return negate


def _choice(test: Fn, yes: Fn, no: Fn) -> Fn:
    return lambda lookup: yes(lookup) if truthy(test(lookup)) else no(lookup)


def _compare(test: Callable[[Any, Any], bool], left: Fn, right: Fn) -> Fn:
    return lambda lookup: test(left(lookup), right(lookup))


def _logic(is_and: bool, operands: list[Fn]) -> Fn:
    # && stops at the first false operand, || at the first true one: a plain loop, as a
    # generator in all()/any() costs more than the comparisons it guards
    def run(lookup: Lookup) -> bool:
        for operand in operands:
            if truthy(operand(lookup)) is not is_and:
                return not is_and
        return is_and

    return run


def _arithmetic(operands: list[Fn], ops: list[str]) -> Fn:
    first = operands[0]
    rest = [(ARITHMETIC[op], operand) for op, operand in zip(ops, operands[1:], strict=True)]

    def run(lookup: Lookup) -> Any:
        value = first(lookup)
        for apply, operand in rest:
            value = apply(value, operand(lookup))
        return value

    return run
