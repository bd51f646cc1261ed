"""Write openapi.sdk.json: every fact an SDK generator needs, read from openapi.yaml.

Usage: gen_sdk_facts.py OUT_JSON [SPEC]. `make generate` writes the committed file and
`make check-generated` regenerates it into a temp dir and diffs. The Python, TypeScript and
Go generators read their operations and constants from this file only, so none of them
names an operation (scripts/check_generators.py fails if one does).

Per operation: the call policy (`x-orch8-method`, `x-orch8-retry`, `x-orch8-long-poll`) and
the `x-orch8-sdk` facts. Constants: the `x-orch8-constants` block, plus every schema number
named by an `x-orch8-sdk-constant` beside it (so the number has one home, its schema).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
VERBS = ("get", "post", "put", "patch", "delete")
SDKS = ("go", "python", "typescript")
NAME = re.compile(r"^[a-z][A-Za-z0-9]*$")  # camelCase; each SDK applies its idiom
RULE = re.compile(r"^P-[A-Z]+-[0-9]+$")
SDK_KEYS = {"produces", "body-argument", "unwrap", "signature", "aliases"}
CONSTANT_KEYWORDS = {"default", "minimum", "maximum", "minItems", "maxItems", "maxLength"}


class FactError(Exception):
    """openapi.yaml states an SDK fact the generators cannot use."""


def deref(spec: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        section, name = node["$ref"].split("/")[-2:]
        node = spec["components"][section][name]
    return node


def body_properties(spec: dict[str, Any], op: dict[str, Any]) -> dict[str, Any]:
    body = op.get("requestBody")
    if body is None:
        return {}
    schema = deref(spec, body)["content"]["application/json"]["schema"]
    return dict(deref(spec, schema).get("properties", {}))


def answer_properties(spec: dict[str, Any], op: dict[str, Any]) -> dict[str, Any]:
    for status, answer in sorted(op["responses"].items()):
        media = deref(spec, answer).get("content", {}).get("application/json")
        if str(status).startswith("2") and media:
            return dict(deref(spec, media["schema"]).get("properties", {}))
    return {}


def sdk_facts(spec: dict[str, Any], op: dict[str, Any], where: str) -> dict[str, Any]:
    """The `x-orch8-sdk` map of one operation, checked and with every key present."""
    raw = op.get("x-orch8-sdk", {})
    if not isinstance(raw, dict) or set(raw) - SDK_KEYS:
        raise FactError(f"{where}: x-orch8-sdk takes only {sorted(SDK_KEYS)}, got {raw!r}")
    body = body_properties(spec, op)
    produces = raw.get("produces")
    if produces not in (None, "task", "tasks"):
        raise FactError(f"{where}: x-orch8-sdk produces is 'task' or 'tasks', got {produces!r}")
    if produces == "tasks" and deref(spec, body.get("tasks", {})).get("type") != "array":
        raise FactError(f"{where}: produces 'tasks' needs a `tasks` array in the body")
    argument = raw.get("body-argument")
    if argument is not None and deref(spec, body.get(argument, {})).get("type") != "array":
        raise FactError(f"{where}: body-argument {argument!r} is not an array of the body")
    unwrap = raw.get("unwrap")
    if unwrap is not None:
        sdks = unwrap.get("sdks") if isinstance(unwrap, dict) else None
        if not isinstance(sdks, list) or not set(sdks) <= set(SDKS):
            raise FactError(f"{where}: unwrap is {{field: <name>, sdks: [{', '.join(SDKS)}]}}")
        if unwrap.get("field") not in answer_properties(spec, op):
            raise FactError(f"{where}: unwrap field {unwrap.get('field')!r} is not in the answer")
        unwrap = {"field": unwrap["field"], "sdks": sorted(sdks)}
    signature = raw.get("signature", "open")
    query = [p for p in op.get("parameters", []) if deref(spec, p).get("in") == "query"]
    if signature not in ("open", "frozen") or (signature == "frozen" and not query):
        raise FactError(f"{where}: signature 'frozen' is for a call whose query params came later")
    aliases = raw.get("aliases", [])
    if not isinstance(aliases, list) or not all(
        isinstance(a, str) and NAME.match(a) for a in aliases
    ):
        raise FactError(f"{where}: aliases are camelCase names, got {aliases!r}")
    return {
        "produces": produces,
        "bodyArgument": argument,
        "unwrap": unwrap,
        "signature": signature,
        "aliases": sorted(aliases),
    }


def operations(spec: dict[str, Any]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for path, item in spec["paths"].items():
        for verb, op in item.items():
            if verb not in VERBS:
                continue
            where = f"{verb.upper()} {path} ({op.get('operationId')})"
            name = op.get("x-orch8-method")
            if not isinstance(name, str) or not NAME.match(name):
                raise FactError(f"{where}: x-orch8-method missing or not camelCase")
            ops.append(
                {
                    "name": name,
                    "operationId": op["operationId"],
                    "verb": verb.upper(),
                    "path": path,
                    "tag": op["tags"][0],
                    "summary": op.get("summary", "").rstrip("."),
                    "retry": op["x-orch8-retry"],
                    "longPoll": op.get("x-orch8-long-poll") is True,
                    "successStatuses": sorted(str(s) for s in op["responses"] if str(s)[0] == "2"),
                    **sdk_facts(spec, op, where),
                }
            )
    names = [n for o in ops for n in (o["name"], *o["aliases"])]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise FactError(f"method names or aliases used twice: {twice}")
    return ops  # in the order of openapi.yaml, which the generated clients keep


def schema_constants(node: Any, pointer: str) -> list[dict[str, Any]]:
    """Every `x-orch8-sdk-constant` under `node`: the named keyword's value, by pointer."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        for keyword, name in (node.get("x-orch8-sdk-constant") or {}).items():
            if keyword not in CONSTANT_KEYWORDS or keyword not in node:
                raise FactError(f"{pointer}: x-orch8-sdk-constant names {keyword!r}, not set here")
            found.append(
                {
                    "name": name,
                    "value": node[keyword],
                    "rule": None,
                    "description": node.get("description"),
                    "source": f"{pointer}/{keyword}",
                }
            )
        for key, child in node.items():
            found += schema_constants(child, f"{pointer}/{key}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += schema_constants(child, f"{pointer}/{i}")
    return found


def constants(spec: dict[str, Any]) -> list[dict[str, Any]]:
    found = schema_constants(spec["components"], "#/components")
    for name, entry in spec.get("x-orch8-constants", {}).items():
        if not RULE.match(str(entry.get("rule"))) or not entry.get("description"):
            raise FactError(f"x-orch8-constants {name}: needs a value, a rule id and a description")
        found.append(
            {
                "name": name,
                "value": entry["value"],
                "rule": entry["rule"],
                "description": entry["description"],
                "source": "#/x-orch8-constants",
            }
        )
    names = [c["name"] for c in found]
    for c in found:
        if not NAME.match(c["name"]) or names.count(c["name"]) > 1:
            raise FactError(f"constant {c['name']!r}: want a camelCase name used once")
        if not isinstance(c["value"], (int, str)) or isinstance(c["value"], bool):
            raise FactError(f"constant {c['name']}: a value is an integer or a string")
    return sorted(found, key=lambda c: c["name"])


def facts(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "$comment": "Generated by scripts/gen_sdk_facts.py from openapi.yaml. DO NOT EDIT.",
        "operations": operations(spec),
        "constants": constants(spec),
    }


def main(out: Path, spec_path: Path) -> int:
    try:
        data = facts(yaml.safe_load(spec_path.read_text()))
    except FactError as exc:
        print(f"gen_sdk_facts: {spec_path.name}: {exc}", file=sys.stderr)
        return 1
    out.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    spec_arg = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "openapi.yaml"
    sys.exit(main(Path(sys.argv[1]), spec_arg))
