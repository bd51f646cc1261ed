"""Refuse JSON the server could not store or send back (P-ERR-5).

orjson parses what it cannot encode again: a value nested past its encoder's recursion
limit (254 levels, less the envelope an answer wraps a stored value in) is a 500 on the way
out, and a NUL inside a string is refused by PostgreSQL's jsonb. Both are caught here, on
the parsed body, before anything stores or echoes it.

The common body is small and flat, so the check is two C-level scans of the raw bytes;
only a body that might be deep or carries a NUL escape pays a walk.
"""

from __future__ import annotations

from typing import Any

import orjson

from orch8_server.problems import Problem

MAX_DEPTH = 128  # P-ERR-5: the body itself is level 1
# orjson's encoder stops at 254 levels; a value that passes with this many extra levels
# around it still encodes inside any answer's envelope.
_ENCODER_LEVELS = 254
_WRAP = _ENCODER_LEVELS - MAX_DEPTH
_NUL = b"\\u0000"


def _pointer(parts: list[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _too_deep(parts: list[str | int]) -> Problem:
    return Problem(
        "payload_too_deep",
        f"JSON nests arrays and objects deeper than {MAX_DEPTH} levels",
        errors=[{"pointer": _pointer(parts), "detail": f"nested deeper than {MAX_DEPTH} levels"}],
    )


def _nul(parts: list[str | int], where: str) -> Problem:
    return Problem(
        "unsupported_value",
        f"a JSON string ({where}) holds NUL (\\u0000), which cannot be stored",
        errors=[{"pointer": _pointer(parts), "detail": f"{where} must not contain \\u0000"}],
    )


def _walk(body: Any) -> Problem | None:
    """The first value P-ERR-5 refuses, as a problem pointing at it (depth first)."""
    stack: list[tuple[Any, list[str | int]]] = [(body, [])]
    while stack:
        value, parts = stack.pop()
        if isinstance(value, dict):
            if len(parts) >= MAX_DEPTH:
                return _too_deep(parts)
            for key, item in value.items():
                if "\x00" in key:
                    return _nul([*parts, key], "an object key")
                stack.append((item, [*parts, key]))
        elif isinstance(value, list):
            if len(parts) >= MAX_DEPTH:
                return _too_deep(parts)
            stack.extend((item, [*parts, i]) for i, item in enumerate(value))
        elif isinstance(value, str) and "\x00" in value:
            return _nul(parts, "a string value")
    return None


def check(raw: bytes, body: Any) -> None:
    """Raise the P-ERR-5 problem for `body` (parsed from `raw`), if any."""
    nul = _NUL in raw
    if not nul and raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return  # cannot nest deeper than it has brackets
    if not nul:
        wrapped = body
        for _ in range(_WRAP):
            wrapped = [wrapped]
        try:
            orjson.dumps(wrapped)
            return
        except orjson.JSONEncodeError:
            pass
    problem = _walk(body)
    if problem is not None:
        raise problem


def decode_problem(exc: orjson.JSONDecodeError) -> Problem:
    """The problem for a body orjson cannot parse: a number that overflows is a value
    the server cannot store (P-ERR-5); anything else is not JSON (P-ERR-3)."""
    if "infinity" in str(exc):
        return Problem(
            "unsupported_value",
            f"a JSON number is too large to store: {exc}",
            errors=[{"pointer": "", "detail": "a number overflows to infinity"}],
        )
    return Problem("malformed_json", f"body is not valid JSON: {exc}")
