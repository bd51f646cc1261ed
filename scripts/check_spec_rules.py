"""House rules for openapi.yaml that the generic linter does not cover.

Usage: check_spec_rules.py [SPEC]. Exits 1 listing every violation.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

METHODS = ("get", "post", "put", "patch", "delete")
FORBIDDEN_SCHEMA_NAMES = ("Client", "Response", "Error", "Request")
RETRY_POLICIES = ("safe", "idempotency-key", "never")
METHOD_NAME = re.compile(r"^[a-z][A-Za-z0-9]*$")  # camelCase; each SDK applies its idiom


def _deref(spec: dict, node: dict) -> dict:
    while "$ref" in node:
        section, name = node["$ref"].split("/")[-2:]
        node = spec["components"][section][name]
    return node


def _has_wait_ms(spec: dict, op: dict) -> bool:
    body = op.get("requestBody")
    if body is None:
        return False
    for media in _deref(spec, body).get("content", {}).values():
        if "wait_ms" in _deref(spec, media.get("schema", {})).get("properties", {}):
            return True
    return False


def call_policy_violations(spec: dict, op: dict, where: str, seen_methods: set[str]) -> list[str]:
    """Every operation carries the SDK call policy the clients are generated from (P-SDK-1)."""
    found: list[str] = []
    method = op.get("x-orch8-method")
    if not isinstance(method, str) or not METHOD_NAME.match(method):
        found.append(f"{where}: x-orch8-method missing or not a camelCase name ({method!r})")
    elif method in seen_methods:
        found.append(f"{where}: duplicate x-orch8-method {method}")
    else:
        seen_methods.add(method)
    if op.get("x-orch8-retry") not in RETRY_POLICIES:
        found.append(f"{where}: x-orch8-retry missing or not one of {RETRY_POLICIES}")
    long_poll = op.get("x-orch8-long-poll")
    if long_poll is not None and long_poll is not True:
        found.append(f"{where}: x-orch8-long-poll must be true or absent")
    if _has_wait_ms(spec, op) and long_poll is not True:
        found.append(f"{where}: takes wait_ms but lacks x-orch8-long-poll: true")
    return found


CODE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
CODE_MEANING = re.compile(r"^([45][0-9][0-9])\. \S")


def problem_code_violations(spec: dict) -> list[str]:
    """Problem.code lists every code in x-orch8-codes (code -> "<status>. meaning"), and
    every problem example uses a listed code with its status (P-ERR-4)."""
    code = spec["components"]["schemas"].get("Problem", {}).get("properties", {}).get("code", {})
    codes = code.get("x-orch8-codes")
    if not isinstance(codes, dict) or not codes:
        return ["schema Problem: code has no x-orch8-codes map (code -> meaning)"]
    if "enum" in code:
        found = ["schema Problem: code must not be an enum (clients must accept new codes)"]
    else:
        found = []
    status_of = {}
    for name, meaning in codes.items():
        match = CODE_MEANING.match(meaning) if isinstance(meaning, str) else None
        if not CODE_NAME.match(str(name)) or match is None:
            found.append(f"x-orch8-codes {name}: want a snake_case code and '<status>. meaning'")
        else:
            status_of[name] = int(match[1])
    for name, response in spec["components"].get("responses", {}).items():
        for media in response.get("content", {}).values():
            example = media.get("example")
            if not isinstance(example, dict) or "code" not in example:
                continue
            if example["code"] not in status_of:
                found.append(f"response {name}: example code {example['code']!r} is not in x-orch8-codes")
            elif example.get("status") != status_of[example["code"]]:
                found.append(f"response {name}: example status {example.get('status')} "
                             f"but x-orch8-codes says {status_of[example['code']]}")
    return found


def violations(spec: dict) -> list[str]:
    found: list[str] = []
    seen_ids: set[str] = set()
    seen_methods: set[str] = set()
    for path, item in spec["paths"].items():
        for method in (m for m in METHODS if m in item):
            op = item[method]
            where = f"{method.upper()} {path}"
            op_id = op.get("operationId")
            if not op_id:
                found.append(f"{where}: no operationId")
            elif op_id in seen_ids:
                found.append(f"{where}: duplicate operationId {op_id}")
            seen_ids.add(op_id or "")
            found += call_policy_violations(spec, op, where, seen_methods)
            responses = op.get("responses", {})
            if not path.startswith("/health/") and not any(str(c).startswith("4") for c in responses):
                found.append(f"{where}: documents no 4xx problem response")
            if "default" not in responses:
                found.append(f"{where}: no default (problem+json) response")
            for code, response in responses.items():
                content = _deref(spec, response).get("content", {})
                if (str(code).startswith(("4", "5")) or code == "default") and list(content) != ["application/problem+json"]:
                    found.append(f"{where} {code}: error responses must be application/problem+json only")
                media = content.get("application/json")
                if media is not None and "example" not in media and "examples" not in media:
                    found.append(f"{where} {code}: JSON response without an example")
            body = op.get("requestBody")
            if body is not None:
                for kind, media in _deref(spec, body).get("content", {}).items():
                    if "example" not in media and "examples" not in media:
                        found.append(f"{where}: {kind} request body without an example")
                    if "$ref" not in media.get("schema", {}):
                        found.append(f"{where}: request body schema must be a named component")
    found += problem_code_violations(spec)
    for name in spec["components"]["schemas"]:
        if any(bad in name for bad in FORBIDDEN_SCHEMA_NAMES):
            found.append(f"schema {name}: names containing {FORBIDDEN_SCHEMA_NAMES} collide in generators")
    return found


def main() -> int:
    spec_path = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent.parent / "openapi.yaml")
    problems = violations(yaml.load(spec_path.read_text(), Loader=yaml.CSafeLoader))
    for problem in problems:
        print(f"spec rule: {problem}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} house-rule violation(s) in {spec_path}", file=sys.stderr)
        return 1
    print(f"spec rules: {spec_path.name} follows the house rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
