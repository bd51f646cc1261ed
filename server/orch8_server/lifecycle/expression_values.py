"""JSON value semantics of Orch8's expressions: truthiness, equality, operators, built-ins.

JSON's types, not Python's: a boolean is not a number (Python's True + 1 is an error here),
`+` never turns a number into text, `<` compares two numbers or two strings, and every
number produced can be written back as JSON (finite, within 64-bit integers).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import orjson

INT_MIN, INT_MAX = -(2**63), 2**64 - 1  # what orjson can write back as a JSON integer


class EvaluationError(ValueError):
    """Runtime: type mismatch, division by zero, bad function argument (`.message`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def truthy(value: Any) -> bool:
    """null, false, 0, "" and [] are false; objects (even empty) and everything else true."""
    if value is None or value is False:
        return False
    if isinstance(value, (int, float, str, list)) and value is not True:
        return bool(value)
    return True


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def type_name(value: Any) -> str:
    """The JSON type name of a value, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise EvaluationError(f"{type(value).__name__} is not a JSON value")


def json_text(value: Any) -> str:
    """Compact JSON text of a value (the `json` built-in, and interpolated non-strings)."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError as exc:
        raise EvaluationError(f"cannot write as JSON: {exc}") from None


def _equal(a: Any, b: Any) -> bool:
    # JSON equality: a boolean is never equal to a number, although Python says True == 1.
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(v, b[k]) for k, v in a.items())
    return False


def in_range(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise EvaluationError("arithmetic result is not a finite number")
    if isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
        raise EvaluationError("arithmetic result is outside the 64-bit integer range")
    return value


def _numbers(op: str, a: Any, b: Any) -> None:
    if not (is_number(a) and is_number(b)):
        raise EvaluationError(f"'{op}' needs two numbers, found {type_name(a)} and {type_name(b)}")


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, str) and isinstance(b, str):
        return a + b
    if isinstance(a, list) and isinstance(b, list):
        return a + b
    if not (is_number(a) and is_number(b)):
        raise EvaluationError(
            f"'+' needs two numbers, two strings or two arrays, found {type_name(a)} and {type_name(b)}"
        )
    return in_range(a + b)


def _sub(a: Any, b: Any) -> Any:
    _numbers("-", a, b)
    return in_range(a - b)


def _mul(a: Any, b: Any) -> Any:
    _numbers("*", a, b)
    return in_range(a * b)


def _div(a: Any, b: Any) -> Any:
    _numbers("/", a, b)
    if b == 0:
        raise EvaluationError("division by zero")
    if isinstance(a, int) and isinstance(b, int) and a % b == 0:
        return in_range(a // b)  # 6 / 3 is 2, not 2.0, so templates render "2"
    try:
        return in_range(a / b)
    except OverflowError:
        raise EvaluationError("arithmetic result is not a finite number") from None


def _mod(a: Any, b: Any) -> Any:
    _numbers("%", a, b)
    if b == 0:
        raise EvaluationError("division by zero")
    if isinstance(a, int) and isinstance(b, int):
        rest = abs(a) % abs(b)  # the sign of the dividend, as in JavaScript and Rust
        return -rest if a < 0 else rest
    return in_range(math.fmod(a, b))


def _order(op: str, test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        if (is_number(a) and is_number(b)) or (isinstance(a, str) and isinstance(b, str)):
            return test(a, b)
        raise EvaluationError(
            f"'{op}' compares two numbers or two strings, found {type_name(a)} and {type_name(b)}"
        )

    return compare


def _contains(a: Any, b: Any) -> bool:
    if isinstance(b, list):
        return any(_equal(a, item) for item in b)
    if not isinstance(b, (str, dict)):
        raise EvaluationError(
            f"'in' needs an array, a string or an object on its right, found {type_name(b)}"
        )
    if not isinstance(a, str):
        raise EvaluationError(
            "'in' needs a string on its left when its right is a string or an object, "
            f"found {type_name(a)}"
        )
    return a in b


def _len(value: Any) -> int:
    if isinstance(value, (str, list, dict)):
        return len(value)
    raise EvaluationError(f"len() takes a string, an array or an object, found {type_name(value)}")


def _abs(value: Any) -> Any:
    if not is_number(value):
        raise EvaluationError(f"abs() takes a number, found {type_name(value)}")
    return in_range(abs(value))


ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": _add,
    "-": _sub,
    "*": _mul,
    "/": _div,
    "%": _mod,
}
COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": _equal,
    "!=": lambda a, b: not _equal(a, b),
    "<": _order("<", lambda a, b: bool(a < b)),
    "<=": _order("<=", lambda a, b: bool(a <= b)),
    ">": _order(">", lambda a, b: bool(a > b)),
    ">=": _order(">=", lambda a, b: bool(a >= b)),
    "in": _contains,
}
FUNCTIONS: dict[str, Callable[[Any], Any]] = {"abs": _abs, "json": json_text, "len": _len}
