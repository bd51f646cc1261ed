"""The request pipeline every route shares: auth, body limits, content type, JSON,
validation against the contract, roles and scopes, and problem rendering (P-ERR-1..3,
P-AUTH-1..3).

`pipeline` wraps each operation's handler (http/app.py) rather than running as Starlette
middleware: middleware costs a full ASGI hop per request on the hot path.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from orch8_server import ids
from orch8_server.auth import (
    OPEN,
    SCOPED_OPERATIONS,
    authenticate,
    check_role,
    check_scope,
    confinement,
    tenant_of,
)
from orch8_server.http import json_guard
from orch8_server.http.operations import Operation
from orch8_server.http.validation import ParamValidator, body_validator
from orch8_server.keys import KeyRing
from orch8_server.lifecycle.tenancy import Confinement
from orch8_server.principal import DEFAULT_TENANT, Principal
from orch8_server.problems import Problem
from orch8_server.storage.base import StorageUnavailable

log = logging.getLogger("orch8.http")

JSON = "application/json"
PROBLEM = "application/problem+json"


def json_response(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type=JSON)


def problem_response(problem: Problem, request: Request) -> Response:
    """Render `problem` for `request` (its path is the `instance`) and count its code."""
    request.app.state.engine.metrics.problems.labels(problem.code).inc()
    instance = request.url.path
    return Response(
        orjson.dumps(problem.body(instance)),
        status_code=problem.status,
        media_type=PROBLEM,
        headers=problem.headers,
    )


def internal_problem(request: Request, exc: BaseException, key_id: str | None = None) -> Response:
    rid = ids.request_id()
    extra = {"request_id": rid, "method": request.method, "path": request.url.path}
    if key_id is not None:  # P-AUTH-4: the key's id, never the key
        extra["key_id"] = key_id
    log.error("unhandled error", exc_info=exc, extra=extra)
    return problem_response(
        Problem("internal", f"an unexpected error occurred; see server logs for request {rid}"),
        request,
    )


BodyT = TypeVar("BodyT")


@dataclass
class Call(Generic[BodyT]):
    """What a handler receives: validated params and body, the raw request, and who is
    calling in which tenant (P-AUTH-2, P-TEN-2). `BodyT` is the generated TypedDict of the
    operation's body schema (the spec's defaults filled in), None for an operation without
    a body; tests/test_operations.py checks that each handler names the right one."""

    request: Request
    params: dict[str, Any]
    body: BodyT
    principal: Principal = OPEN
    tenant: str = DEFAULT_TENANT

    @property
    def confined(self) -> Confinement | None:
        """P-AUTH-6/7: set for a worker key, which acts only on what it holds."""
        return confinement(self.principal)


Handler = Callable[[Call[Any]], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]  # what Starlette routes call


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == JSON or (media.startswith("application/") and media.endswith("+json"))


# A body over the limit is still read (and dropped) up to this many times the limit, so the
# 413 reaches the client: closing a socket with unread data sends a reset, which makes the
# client (or a proxy in front) lose the answer and retry the same report as an outage.
_DRAIN_FACTOR = 16


def _too_large(limit: int) -> Problem:
    return Problem("payload_too_large", f"body exceeds {limit} bytes")


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit * _DRAIN_FACTOR:
        raise _too_large(limit)  # not worth draining: the connection is closed instead
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                if size > limit * _DRAIN_FACTOR:
                    raise _too_large(limit)
                chunks.clear()  # P-ERR-3: drained, then answered 413 below
                continue
            chunks.append(chunk)
    except ClientDisconnect:  # P-HTTP-2 answered 408 (http/limits.py), or the client left
        raise Problem("request_timeout", "the request body did not arrive") from None
    if size > limit:
        raise _too_large(limit)
    return b"".join(chunks)


def keyring(request: Request) -> KeyRing:
    """The app's keys in force (create_app sets them; the launcher reloads its ring on
    SIGHUP)."""
    keys: KeyRing = request.app.state.keyring
    return keys


def pipeline(op: Operation, handler: Handler) -> Endpoint:
    """`handler` behind the shared pipeline for `op`: backpressure, auth, tenant, params,
    body, scope, problems and the request_seconds metric."""
    params_of = ParamValidator(op.path, op.method.lower())
    validate_body = body_validator(op.body_schema) if op.body_schema else None
    operation, roles, body_required = op.id, op.roles, op.body_required
    scoped = operation in SCOPED_OPERATIONS
    clock = time.perf_counter
    # P-BP-3: health and metrics never count against --max-inflight-requests.
    capped = not (op.path.startswith("/health/") or op.path == "/metrics")

    async def run(request: Request) -> Response:
        started = clock()
        engine = request.app.state.engine
        counted = False
        principal = OPEN
        try:
            if capped and engine.backpressure.max_inflight:  # P-BP-3
                engine.backpressure.enter_request()
                counted = True
            settings = engine.settings
            tenant = DEFAULT_TENANT
            if roles is not None:
                keys = keyring(request)
                if keys.required:
                    principal = authenticate(request, keys)  # P-AUTH-1: 401
                    check_role(principal, roles, operation)  # P-AUTH-2/3: 403
                tenant = tenant_of(request, principal)  # P-TEN-2
            params = params_of(request.path_params, request.query_params)
            body: Any = None
            if validate_body is not None:
                body = {}  # an optional body left out: its schema's defaults (below)
                raw = await _read_body(request, settings.max_body_bytes)
                if raw:  # whitespace alone is not JSON: 400 malformed_json (P-ERR-3)
                    if not _is_json(request.headers.get("content-type", "")):
                        raise Problem(
                            "unsupported_media_type",
                            "send the body as Content-Type: application/json",
                        )
                    try:
                        body = orjson.loads(raw)
                    except orjson.JSONDecodeError as exc:
                        raise json_guard.decode_problem(exc) from None
                    json_guard.check(raw, body)  # P-ERR-5, before anything reads it
                elif body_required:
                    raise Problem(
                        "validation_error",
                        "a JSON request body is required",
                        errors=[{"pointer": "", "detail": "request body is required"}],
                    )
                body = validate_body(body)  # the spec's defaults filled in, ints made ints
            if scoped:
                check_scope(principal, operation, body)  # P-AUTH-3: worker key scope
            return await handler(Call(request, params, body, principal, tenant))
        except Problem as problem:
            return problem_response(problem, request)
        except StorageUnavailable as exc:  # P-ERR-1: a database outage is a 503, not a 500
            unavailable = Problem("unavailable", str(exc), headers={"Retry-After": "1"})
            return problem_response(unavailable, request)
        except Exception as exc:
            return internal_problem(request, exc, principal.key_id)
        finally:  # P-TEL-6: one cached child, one observe (about 1 us a request)
            if counted:
                engine.backpressure.leave_request()
            engine.metrics.request_seconds[operation].observe(clock() - started)

    run.__name__ = handler.__name__
    return run
