"""Request validation against the contract itself (P-ERR-2).

Bodies and parameters are checked with the JSON Schemas of openapi.yaml (bundled as
_generated/openapi.json), so the server accepts exactly what the spec accepts: `27.0` is an
integer, `false` is not. fastjsonschema (compiled) is the fast path; on failure
python-jsonschema lists every error with a JSON pointer.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import fastjsonschema
import jsonschema

from orch8_server.problems import Problem

if TYPE_CHECKING:
    from orch8_server._generated.models import FieldProblem

_REF = "#/components/schemas/"


@cache
def spec() -> dict[str, Any]:
    text = resources.files("orch8_server._generated").joinpath("openapi.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _rewrite_refs(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(_REF):
                out[key] = "#/definitions/" + value[len(_REF) :]
            elif key in ("example", "examples"):
                continue
            else:
                out[key] = _rewrite_refs(value)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v) for v in node]
    return node


@cache
def _definitions() -> dict[str, Any]:
    rewritten: dict[str, Any] = _rewrite_refs(copy.deepcopy(spec()["components"]["schemas"]))
    return rewritten


def _document(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        **_rewrite_refs(schema),
        "definitions": _definitions(),
    }


class SchemaValidator:
    """Validates one schema; raises a `validation_error` problem listing every error."""

    def __init__(self, schema: dict[str, Any], pointer_prefix: str = "") -> None:
        doc = _document(schema)
        self._fast = fastjsonschema.compile(doc)
        self._full = jsonschema.Draft7Validator(
            doc, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
        )
        self._prefix = pointer_prefix

    def __call__(self, value: Any) -> Any:
        try:
            return self._fast(value)
        except fastjsonschema.JsonSchemaValueException as fast_error:
            raise self._problem(value, fast_error) from None

    def _problem(self, value: Any, fast_error: fastjsonschema.JsonSchemaValueException) -> Problem:
        errors: list[FieldProblem] = []
        for err in sorted(self._full.iter_errors(value), key=lambda e: list(e.absolute_path)):
            pointer = "".join(
                "/" + str(p).replace("~", "~0").replace("/", "~1") for p in err.absolute_path
            )
            errors.append({"pointer": self._prefix + pointer, "detail": _short(err.message)})
        if not errors:  # the two engines disagree only on formats; trust the stricter one
            path = [p for p in (fast_error.path or [])[1:]]
            pointer = "".join("/" + str(p) for p in path)
            errors.append({"pointer": self._prefix + pointer, "detail": _short(fast_error.message)})
        errors = errors[:50]
        noun = "field is" if len(errors) == 1 else "fields are"
        return Problem(
            "validation_error",
            f"{len(errors)} {noun} invalid: {errors[0]['pointer'] or '/'} {errors[0]['detail']}",
            errors=errors,
        )


def _short(message: str) -> str:
    return message if len(message) <= 200 else message[:197] + "..."


@cache
def body_validator(schema_name: str) -> SchemaValidator:
    return SchemaValidator({"$ref": _REF + schema_name})


_INT = re.compile(r"^-?\d+$")


class ParamValidator:
    """Path and query parameters of one operation, decoded from strings and validated."""

    def __init__(self, path: str, method: str) -> None:
        item = spec()["paths"][path]
        params = [*item.get("parameters", []), *item[method].get("parameters", [])]
        resolved = []
        for p in params:
            if "$ref" in p:
                p = spec()["components"]["parameters"][p["$ref"].rsplit("/", 1)[1]]
            resolved.append(p)
        self._params = [
            (
                p["name"],
                p["in"],
                SchemaValidator(p["schema"], f"#/{p['in']}/{p['name']}"),
                _kind(p["schema"]),
            )
            for p in resolved
        ]

    def __call__(self, path_params: dict[str, str], query: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        errors: list[FieldProblem] = []
        for name, where, validator, kind in self._params:
            if where == "path":
                raw: Any = path_params.get(name)
            elif kind == "array":
                raw = query.getlist(name) or None
            else:
                raw = query.get(name)
            if raw is None:
                continue
            if kind == "integer":
                if not _INT.match(raw):
                    errors.append({"pointer": f"#/{where}/{name}", "detail": "must be an integer"})
                    continue
                raw = int(raw)
            try:
                out[name] = validator(raw)
            except Problem as problem:
                errors += problem.errors
        if errors:
            raise Problem(
                "validation_error",
                f"invalid parameter {errors[0]['pointer']}: {errors[0]['detail']}",
                errors=errors,
            )
        return out


def _kind(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        schema = spec()["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    kind = schema.get("type", "string")
    return kind if isinstance(kind, str) else "string"
