"""Request validation against the contract itself (P-ERR-2).

Bodies and parameters are checked with the JSON Schemas of openapi.yaml (bundled as
_generated/openapi.json), so the server accepts exactly what the spec accepts: `27.0` is an
integer, `false` is not. fastjsonschema (compiled) is the fast path; on failure
python-jsonschema lists every error with a JSON pointer.

Every error points at the field it is about (a missing member, an unknown member, not its
object) and says what the contract wants in JSON's words ("must be an object", "is
required", "must have at most 100 items"); an echoed value is cut at 80 characters.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import fastjsonschema

from orch8_server.problems import Problem

if TYPE_CHECKING:
    import jsonschema

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


# Defaults the server's settings own: a poll naming no `wait_ms` waits --wait-ms (P-POLL-2),
# which the spec's `default: 30000` only documents. Every other `default:` of a body schema
# is filled in by the validator (fastjsonschema's use_default), so handlers and rules read
# the value the spec states.
SETTINGS_DEFAULTS = {"PollOptions": ("wait_ms",), "PollBatchOptions": ("wait_ms",)}


@cache
def _definitions() -> dict[str, Any]:
    schemas = copy.deepcopy(spec()["components"]["schemas"])
    for name, fields in SETTINGS_DEFAULTS.items():
        for field in fields:
            del schemas[name]["properties"][field]["default"]
    rewritten: dict[str, Any] = _rewrite_refs(schemas)
    return rewritten


def schema_property(schema_name: str, field: str) -> dict[str, Any]:
    """One property of a components schema as the spec states it (its default, bounds)."""
    prop: dict[str, Any] = spec()["components"]["schemas"][schema_name]["properties"][field]
    return prop


def _reachable(schema: Any) -> dict[str, Any]:
    """The definitions `schema` refers to, directly or through each other."""
    found: dict[str, Any] = {}
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/definitions/"):
                name = ref.rsplit("/", 1)[1]
                if name not in found:
                    found[name] = _definitions()[name]
                    todo.append(found[name])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return found


def _document(schema: dict[str, Any]) -> dict[str, Any]:
    # Only the definitions it uses: compiling a parameter's schema with all of them took
    # ~0.2 s, paid by the first request that used the parameter.
    rewritten = _rewrite_refs(schema)
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        **rewritten,
        "definitions": _reachable(rewritten),
    }


Fix = Callable[[Any], Any]


def _whole(value: Any) -> Any:
    return int(value) if type(value) is float and value.is_integer() else value


def _integer_fixer(schema: Any, seen: frozenset[str] = frozenset()) -> Fix | None:
    """A function that turns each float at an `integer` place of `schema` into an int.

    JSON Schema counts 2.0 as an integer, so the validator passes it, but the rules slice,
    add and store these numbers as ints (a float batch_size was a 500; PostgreSQL refuses a
    float for an integer column). Only the places the schema types as integer change:
    free-form JSON (params, outputs) keeps its numbers as sent. None: nothing to fix.
    """
    if not isinstance(schema, dict):
        return None
    ref = schema.get("$ref", "")
    if ref.startswith("#/definitions/"):
        name = ref.rsplit("/", 1)[1]
        if name in seen:  # a recursive schema (nested workflow blocks): built when first used
            return lambda value: _named_fixer(name)(value)
        return _integer_fixer(_definitions()[name], seen | {name})
    types = schema.get("type")
    if types == "integer" or (isinstance(types, list) and "integer" in types):
        return _whole
    branches = [f for key in ("allOf", "anyOf", "oneOf") for sub in schema.get(key, ())
                if (f := _integer_fixer(sub, seen)) is not None]  # fmt: skip
    fields = {k: f for k, sub in schema.get("properties", {}).items()
              if (f := _integer_fixer(sub, seen)) is not None}  # fmt: skip
    item = _integer_fixer(schema.get("items"), seen)
    if not (branches or fields or item):
        return None

    def fix(value: Any) -> Any:
        if fields and type(value) is dict:
            for key, field_fix in fields.items():
                if key in value:
                    value[key] = field_fix(value[key])
        elif item is not None and type(value) is list:
            value[:] = [item(v) for v in value]
        for branch in branches:
            value = branch(value)
        return value

    return fix


@cache
def _named_fixer(name: str) -> Fix:
    return _integer_fixer(_definitions()[name], frozenset({name})) or (lambda value: value)


class SchemaValidator:
    """Validates one schema; raises a `validation_error` problem listing every error.
    A valid value comes back with floats at integer places made ints (_integer_fixer)."""

    def __init__(self, schema: dict[str, Any], pointer_prefix: str = "") -> None:
        doc = _document(schema)
        # Compiled on first use: compiling every operation's validators at start cost
        # ~1.2 s of CPU per server start (hundreds of starts in `make test`); the first
        # request of each schema pays its own compile instead.
        self._doc = doc
        self._fast: Callable[[Any], Any] | None = None
        self._fix = _integer_fixer(_rewrite_refs(schema))
        self._full: jsonschema.Draft7Validator | None = None  # for refused bodies only
        self._prefix = pointer_prefix

    def __call__(self, value: Any) -> Any:
        fast = self._fast
        if fast is None:
            fast = self._fast = fastjsonschema.compile(self._doc)
        try:
            value = fast(value)
        except fastjsonschema.JsonSchemaValueException as fast_error:
            raise self._problem(value, fast_error) from None
        return value if self._fix is None else self._fix(value)

    def _problem(self, value: Any, fast_error: fastjsonschema.JsonSchemaValueException) -> Problem:
        full = self._full
        if full is None:
            import jsonschema  # ~0.1 s of CPU to import: every server start paid it

            full = self._full = jsonschema.Draft7Validator(
                self._doc, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
            )
        found: dict[tuple[str, str], None] = {}  # (pointer, detail), in order, once each
        for err in sorted(full.iter_errors(value), key=lambda e: _path_key(e.absolute_path)):
            for path, detail in _explain(err):
                found[(self._prefix + _pointer(path), detail)] = None
        if not found:  # the two engines disagree only on formats; trust the stricter one
            path, rule = list(fast_error.path or [])[1:], fast_error.rule or ""
            said = _detail(rule, fast_error.rule_definition)
            found[(self._prefix + _pointer(path), said or "is invalid")] = None
        errors: list[FieldProblem] = [{"pointer": p, "detail": d} for p, d in list(found)[:50]]
        noun = "field is" if len(errors) == 1 else "fields are"
        return Problem(
            "validation_error",
            f"{len(errors)} {noun} invalid: {errors[0]['pointer'] or '/'} {errors[0]['detail']}",
            errors=errors,
        )


ECHO_MAX = 80  # the longest echoed value: a detail never carries a large one back
ALLOWED_MAX = 160  # the contract's own member names: a typo is told what it could be
_TYPES = {"object": "an object", "array": "an array", "string": "a string",
          "integer": "an integer", "number": "a number", "boolean": "a boolean", "null": "null"}  # fmt: skip
_FORMATS = {"date-time": "an RFC 3339 date-time", "uri-reference": "a URI reference"}


def _path_key(path: Any) -> list[tuple[int, str]]:
    return [(0, f"{p:020d}") if isinstance(p, int) else (1, str(p)) for p in path]


def _pointer(path: Any) -> str:
    """A JSON pointer to `path`; a member name past ECHO_MAX is cut too (an unknown
    member's name comes from the client and may be any size)."""
    return "".join("/" + echo(str(p)).replace("~", "~0").replace("/", "~1") for p in path)


def echo(value: Any) -> str:
    """`value` in JSON (a string as it is), cut at ECHO_MAX characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= ECHO_MAX else text[: ECHO_MAX - 3] + "..."


def _types(wanted: Any) -> str:
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    return " or ".join(_TYPES.get(n, n) for n in names)


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _detail(keyword: str, wanted: Any) -> str | None:
    """The contract's words for one failed keyword; None for those that need context."""
    if keyword == "type":
        return f"must be {_types(wanted)}"
    if keyword == "enum":
        return "must be one of: " + ", ".join(echo(v) for v in wanted)
    if keyword == "const":
        return f"must be {echo(wanted)}"
    if keyword == "pattern":
        return f"must match the pattern {echo(wanted)}"
    if keyword == "format":
        return f"must be {_FORMATS.get(wanted, f'a valid {wanted}')}"
    if keyword == "minLength":
        return (
            "must not be empty"
            if wanted == 1
            else f"must be at least {_plural(wanted, 'character')} long"
        )
    if keyword == "maxLength":
        return f"must be at most {_plural(wanted, 'character')} long"
    words = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "greater than",
             "exclusiveMaximum": "less than", "multipleOf": "a multiple of"}  # fmt: skip
    if keyword in words:
        return f"must be {words[keyword]} {wanted}"
    counts = {"minItems": ("at least", "item"), "maxItems": ("at most", "item"),
              "minProperties": ("at least", "member"), "maxProperties": ("at most", "member")}  # fmt: skip
    if keyword in counts:
        bound, noun = counts[keyword]
        return f"must have {bound} {_plural(wanted, noun)}"
    if keyword == "uniqueItems":
        return "must not hold the same item twice"
    if keyword == "not":
        return "is not allowed here"
    if keyword == "required":
        return "is required"
    if keyword == "additionalProperties":
        return "is not allowed"
    return None


def _explain(err: jsonschema.ValidationError) -> list[tuple[list[Any], str]]:
    """(path, detail) pairs for one python-jsonschema error, the path at the field meant."""
    path, keyword, wanted, instance = (
        list(err.absolute_path),
        err.validator,
        err.validator_value,
        err.instance,
    )
    schema = err.schema if isinstance(err.schema, dict) else {}
    if keyword == "required" and isinstance(instance, dict):  # the missing member itself
        return [([*path, name], "is required") for name in wanted if name not in instance]
    if keyword == "additionalProperties" and isinstance(instance, dict):
        known = list(schema.get("properties", {}))
        patterns = list(schema.get("patternProperties", {}))
        allowed = ", ".join(known)
        detail = "is not allowed" + (
            f" (allowed: {allowed})" if known and len(allowed) <= ALLOWED_MAX else ""
        )
        return [([*path, name], detail) for name in instance
                if name not in known and not any(re.search(p, name) for p in patterns)]  # fmt: skip
    if "propertyNames" in err.relative_schema_path:  # a bad member name, not a bad value
        inner = _detail(str(keyword), wanted) or "is not allowed"
        return [(path, f"member name {echo(json.dumps(instance))} {inner}")]
    if keyword in ("oneOf", "anyOf"):
        ctx = list(err.context or ())
        if not ctx:  # valid under more than one alternative
            return [(path, "must match exactly one of the allowed shapes")]
        here = [e for e in ctx if not e.relative_path]
        if here and len(here) == len(ctx) and all(e.validator == "type" for e in here):
            kinds = [_types(e.validator_value) for e in here]  # "an object", "null"
            return [(path, "must be " + " or ".join(dict.fromkeys(kinds)))]
        deeper = [e for e in ctx if e.validator != "type" or e.relative_path]
        from jsonschema.exceptions import best_match  # loaded by _problem already

        return _explain(best_match(deeper or ctx))
    said = _detail(str(keyword), wanted)
    return [(path, said or f"does not satisfy {keyword}")]


@cache
def body_validator(schema_name: str) -> SchemaValidator:
    return SchemaValidator({"$ref": _REF + schema_name})


_INT = re.compile(r"^-?\d+$")


class ParamValidator:
    """Path and query parameters of one operation, decoded from strings and validated; an
    absent parameter with a `default` in the spec is given that default."""

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
        self._defaults = {
            p["name"]: p["schema"]["default"] for p in resolved if "default" in p["schema"]
        }

    def __call__(self, path_params: dict[str, str], query: Any) -> dict[str, Any]:
        out: dict[str, Any] = dict(self._defaults)
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
