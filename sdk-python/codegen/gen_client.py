"""Generate the client methods of Orch8Client and AsyncOrch8Client from openapi.yaml (P-SDK-2).

Usage: gen_client.py OPENAPI_YAML SDK_FACTS_JSON OUT_FILE. A generator post-hook
(codegen/config.yaml): it runs inside the output dir of openapi-python-client, so
`make generate` writes it and `make check-generated` drift-checks it with the rest of
orch8/_generated.

One method per operation of openapi.sdk.json (scripts/gen_sdk_facts.py), named by
`x-orch8-method` (snake_cased); `x-orch8-retry` decides whether the client may repeat the
call and `x-orch8-long-poll` its timeout. Of its `x-orch8-sdk` facts, `unwrap` (where its
`sdks` list Python) returns that field of the answer and `aliases` become other names of
the method; keyword-only arguments never break a caller, so `signature: frozen` needs
nothing here, and the first required body property is already the positional argument
(`body-argument`). Argument types come from openapi.yaml's schemas. The sync and the async
class come from ONE template (codegen/client_methods.py.jinja), rendered twice. No
operation is named here (scripts/check_generators.py).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import yaml

HERE = Path(__file__).resolve().parent


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


@dataclass
class Arg:
    """One method parameter: a path or query parameter or a body property."""

    name: str
    type: str
    where: str  # path | query | body
    required: bool = False
    any_json: bool = False  # no type in the schema: None is a real JSON null, OMIT omits
    datetime: bool = False
    mapping: bool = False
    sequence: bool = False
    deprecated: bool = False
    items: Item | None = None  # an array of objects: each item's keys are checked
    flag_default: bool | None = None  # a boolean with a schema default: always sent

    @property
    def default(self) -> str:
        if self.flag_default is not None:
            return repr(self.flag_default)
        return "OMIT" if self.any_json else "None"

    @property
    def always_sent(self) -> bool:
        return self.required or self.flag_default is not None

    @property
    def annotation(self) -> str:
        if self.required or self.flag_default is not None:
            return self.type
        return self.type if self.any_json else f"{self.type} | None"


@dataclass
class Item:
    """The object schema of an array's items, for the TypeError on unknown keys."""

    allowed: list[str]
    required: list[str]


@dataclass
class Operation:
    method: str
    summary: str
    module: str
    endpoint: str
    retry: str
    long_poll: bool
    returns: str
    unwrap: str | None
    body_model: str | None
    aliases: list[str] = field(default_factory=list)
    # A long-poll whose wait_ms is a query parameter (a wait for a final state, P-WF-9) waits
    # its own default (0) when omitted, not the poll's; None: wait_ms is in the body.
    wait_default: int | None = None
    positional: list[Arg] = field(default_factory=list)
    keywords: list[Arg] = field(default_factory=list)

    @property
    def args(self) -> list[Arg]:
        return [*self.positional, *self.keywords]

    @property
    def body_args(self) -> list[Arg]:
        return [a for a in self.args if a.where == "body"]

    @property
    def call_args(self) -> list[Arg]:
        return [a for a in self.args if a.where != "body"]

    @property
    def safe(self) -> str:
        """The Python expression deciding whether the call may be repeated (P-SDK-2)."""
        if self.retry == "safe":
            return "True"
        if self.retry == "never":
            return "False"
        for arg in self.body_args:
            if arg.name == "idempotency_key":
                return "bool(idempotency_key)"
            if arg.items is not None and "idempotency_key" in arg.items.allowed:
                return f'bool({arg.name}) and all(i.get("idempotency_key") for i in {arg.name})'
        raise SystemExit(f"gen_client: {self.method}: idempotency-key without idempotency_key")


class Spec:
    def __init__(self, raw: dict[str, Any], facts: dict[str, Any]) -> None:
        self.raw = raw
        self.facts = facts
        self.schemas: dict[str, Any] = raw["components"]["schemas"]

    def resolve(self, node: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """Follow `$ref`s; the last referenced component's name and its schema."""
        name = None
        while "$ref" in node:
            _, _, section, name = node["$ref"].split("/")
            node = self.raw["components"][section][name]
        return name, node

    def py_type(self, node: dict[str, Any]) -> tuple[str, dict[str, bool]]:
        _, schema = self.resolve(node)
        flags = {"any_json": False, "datetime": False, "mapping": False, "sequence": False}
        kind = schema.get("type")
        if isinstance(kind, list) and "null" in kind and len(kind) == 2:
            # `[integer, 'null']` (a cap whose null removes it): the type or None, and None is
            # a real JSON null, so an optional one defaults to OMIT.
            (inner_kind,) = (k for k in kind if k != "null")
            inner, _ = self.py_type({**schema, "type": inner_kind})
            flags["any_json"] = True
            return f"{inner} | None", flags
        if kind == "string":
            if schema.get("format") == "date-time":
                flags["datetime"] = True
                return "datetime.datetime | str", flags
            return "str", flags
        if kind == "integer":
            return "int", flags
        if kind == "boolean":
            return "bool", flags
        if kind == "object":
            flags["mapping"] = True
            values = schema.get("additionalProperties")
            if isinstance(values, dict) and values.get("type") in ("string", "integer"):
                # A map of plain values (labels, headers, queue_weights): typed values.
                inner, _ = self.py_type(values)
                return f"Mapping[str, {inner}]", flags
            return "Mapping[str, Any]", flags
        if kind == "array":
            flags["sequence"] = True
            inner, _ = self.py_type(schema.get("items", {}))
            if inner.startswith("Mapping"):
                return "Sequence[Mapping[str, Any]]", flags
            return f"Sequence[{inner}]", flags
        flags["any_json"] = True
        return "Any", flags

    def item(self, node: dict[str, Any]) -> Item | None:
        _, schema = self.resolve(node)
        if schema.get("type") != "array":
            return None
        _, inner = self.resolve(schema.get("items", {}))
        if inner.get("type") != "object" or "properties" not in inner:
            return None
        return Item(sorted(inner["properties"]), sorted(inner.get("required", [])))

    def response_type(self, op: dict[str, Any]) -> str:
        out: list[str] = []
        for status, answer in sorted(op["responses"].items()):
            if not str(status).startswith("2"):
                continue
            content = answer.get("content")
            if not content:
                out.append("None")
            elif "application/json" in content:
                name, _ = self.resolve(content["application/json"]["schema"])
                assert name, f"inline response schema in {op['operationId']}"
                if name not in out:
                    out.append(name)
            else:
                out.append("str")
        return " | ".join(sorted(out, key=lambda t: t == "None"))

    def operations(self) -> list[Operation]:
        ops: list[Operation] = []
        shared: dict[str, Any] = self.raw["components"].get("parameters", {})
        for fact in self.facts["operations"]:
            item = self.raw["paths"][fact["path"]]
            op = item[fact["verb"].lower()]
            params = [*item.get("parameters", []), *op.get("parameters", [])]
            params = [shared[p["$ref"].split("/")[-1]] if "$ref" in p else p for p in params]
            ops.append(self._operation(fact, op, params))
        return ops

    def _operation(self, fact: dict[str, Any], op: dict[str, Any], params: list[Any]) -> Operation:
        method = snake(fact["name"])
        returns = self.response_type(op)
        unwrap = (
            fact["unwrap"]["field"] if "python" in (fact["unwrap"] or {}).get("sdks", []) else None
        )
        if unwrap:
            _, schema = self.resolve({"$ref": f"#/components/schemas/{returns}"})
            inner, _ = self.py_type(schema["properties"][unwrap]["items"])
            name, _ = self.resolve(schema["properties"][unwrap]["items"])
            returns = f"list[{name or inner}]"
        result = Operation(
            method=method,
            summary=fact["summary"] or method,
            module=f"{snake(fact['tag']).replace('-', '_')}",
            endpoint=snake(fact["operationId"]),
            retry=fact["retry"],
            long_poll=fact["longPoll"],
            returns=returns,
            unwrap=unwrap,
            body_model=None,
            aliases=[snake(a) for a in fact["aliases"]],
        )
        for p in params:
            if p["name"] == "wait_ms" and p["in"] == "query":
                result.wait_default = int(p["schema"].get("default", 0))
            type_, flags = self.py_type(p["schema"])
            if p["in"] == "query" and flags["datetime"]:
                type_ = "datetime.datetime"  # the generated endpoint formats it
            arg = Arg(p["name"], type_, p["in"], required=p.get("required", False), **flags)
            (result.positional if p["in"] == "path" else result.keywords).append(arg)
        body = op.get("requestBody")
        if body:
            name, schema = self.resolve(body["content"]["application/json"]["schema"])
            result.body_model = name
            required = schema.get("required", [])
            for prop, node in schema.get("properties", {}).items():
                type_, flags = self.py_type(node)
                arg = Arg(
                    prop,
                    type_,
                    "body",
                    required=prop in required,
                    deprecated=bool(node.get("deprecated")),
                    items=self.item(node),
                    **flags,
                )
                if type_ == "bool" and isinstance(node.get("default"), bool):
                    arg.flag_default = node["default"]
                # The first required property of a call without path parameters is its subject
                # (a task's handler_name, a worker's worker_id, a batch's items).
                if arg.required and not result.positional:
                    result.positional.append(arg)
                else:
                    result.keywords.append(arg)
        result.keywords.sort(key=lambda a: not a.required)
        return result


def render(spec_path: str, facts_path: str, out_file: str) -> None:
    spec = Spec(
        yaml.safe_load(Path(spec_path).read_text()), json.loads(Path(facts_path).read_text())
    )
    ops = spec.operations()
    names = [name for o in ops for name in (o.method, *o.aliases)]
    if len(set(names)) != len(names):
        raise SystemExit(f"gen_client: a method name used twice in {names}")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    template = env.get_template("client_methods.py.jinja")
    models = sorted(
        {o.body_model for o in ops if o.body_model}
        | {t for o in ops for t in re.findall(r"[A-Z]\w+", o.returns) if t != "None"}
    )
    modules = sorted({(o.module, o.endpoint) for o in ops})
    Path(out_file).write_text(
        template.render(ops=ops, models=models, modules=modules, flavours=("sync", "async"))
    )


if __name__ == "__main__":
    render(sys.argv[1], sys.argv[2], sys.argv[3])
