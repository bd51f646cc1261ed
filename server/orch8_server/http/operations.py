"""The operations of openapi.yaml and the handlers registered for them.

A handler names its operation once, `@operation("enqueueTask")`; its path, method, request
body schema, roles and defaults are read from the spec, so a route cannot disagree with the
contract it serves. http/app.py builds the routes from `bound()`, which refuses to start
when an operation has no handler or a handler names no operation.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from starlette.responses import Response

from orch8_server.http.validation import spec

METHODS = ("get", "put", "post", "delete", "patch")
_PARAM = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Operation:
    """One operation as the spec declares it."""

    id: str
    method: str  # upper case, as Starlette names it
    path: str  # the spec's template, e.g. /queues/{queue_name}/pause
    body_schema: str | None  # components/schemas name of the JSON body, if it takes one
    body_required: bool
    roles: frozenset[str] | None  # None: public (`security: []`); admin is always implied
    route_path: str  # `path` with Starlette converters: a name that may hold "/" uses :path


def _roles(op: dict[str, Any]) -> frozenset[str] | None:
    """P-AUTH-2: the operation's `x-orch8-roles`; None for `security: []`. An operation
    declaring neither is refused at start-up rather than left open."""
    if op.get("security") == []:
        return None
    if "x-orch8-roles" not in op:
        raise RuntimeError(f"{op['operationId']}: openapi.yaml declares no x-orch8-roles")
    return frozenset(op["x-orch8-roles"])


def _body(op: dict[str, Any]) -> tuple[str | None, bool]:
    body = op.get("requestBody")
    if body is None:
        return None, False
    ref: str = body["content"]["application/json"]["schema"]["$ref"]
    return ref.rsplit("/", 1)[1], bool(body.get("required"))


def _slashed(item: dict[str, Any], op: dict[str, Any]) -> set[str]:
    """Path parameters whose schema admits "/" (queue, handler and sequence names)."""
    names = set()
    for param in [*item.get("parameters", []), *op.get("parameters", [])]:
        if "$ref" in param:
            param = spec()["components"]["parameters"][param["$ref"].rsplit("/", 1)[1]]
        schema = param["schema"]
        if "$ref" in schema:
            schema = spec()["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        if param["in"] == "path" and re.search(schema.get("pattern", "^$"), "a/b"):
            names.add(param["name"])
    return names


def _route_path(path: str, slashed: set[str]) -> str:
    return _PARAM.sub(lambda m: "{" + m[1] + (":path}" if m[1] in slashed else "}"), path)


@cache
def operations() -> dict[str, Operation]:
    """Every operation of the spec by operationId, in the spec's order."""
    found: dict[str, Operation] = {}
    for path, item in spec()["paths"].items():
        for method in METHODS:
            if method not in item:
                continue
            op = item[method]
            route_path = _route_path(path, _slashed(item, op))
            body_schema, body_required = _body(op)
            found[op["operationId"]] = Operation(
                op["operationId"],
                method.upper(),
                path,
                body_schema,
                body_required,
                _roles(op),
                route_path,
            )
    return found


HandlerT = TypeVar("HandlerT", bound=Callable[..., Awaitable[Response]])

_handlers: dict[str, Callable[..., Awaitable[Response]]] = {}


def operation(operation_id: str) -> Callable[[HandlerT], HandlerT]:
    """Register the decorated function as the handler of `operation_id`."""

    def register(handler: HandlerT) -> HandlerT:
        if operation_id in _handlers:
            raise RuntimeError(f"{operation_id}: two handlers ({handler.__qualname__})")
        _handlers[operation_id] = handler
        return handler

    return register


def registered() -> dict[str, Callable[..., Awaitable[Response]]]:
    """The handlers registered so far, by operationId (the routes_* modules register)."""
    return dict(_handlers)


def unmatched(handler_ids: set[str], operation_ids: set[str]) -> list[str]:
    """What keeps handlers and spec apart, one line each (empty when they match)."""
    return [f"{op}: in openapi.yaml, no handler" for op in sorted(operation_ids - handler_ids)] + [
        f"{op}: a handler, not in openapi.yaml" for op in sorted(handler_ids - operation_ids)
    ]


def bound() -> list[tuple[Operation, Callable[..., Awaitable[Response]]]]:
    """Each operation with its handler, in the spec's order; raises when they disagree."""
    handlers, ops = registered(), operations()
    problems = unmatched(set(handlers), set(ops))
    if problems:
        raise RuntimeError("handlers and openapi.yaml disagree: " + "; ".join(problems))
    return [(op, handlers[op_id]) for op_id, op in ops.items()]
