"""The Starlette application: routes, lifespan, and problem+json for router errors."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from orch8_server import timefmt
from orch8_server.config import Settings
from orch8_server.http import (  # noqa: F401 (the routes_* modules register their handlers)
    routes_auth,
    routes_clock,
    routes_history,
    routes_queues,
    routes_tasks,
    routes_tenants,
    routes_workers,
    routes_workflows,
    ui,
)
from orch8_server.http.endpoint import Endpoint, internal_problem, pipeline, problem_response
from orch8_server.http.operations import bound
from orch8_server.http.router import IndexedRouter
from orch8_server.keys import KeyRing
from orch8_server.lifecycle.compose import build
from orch8_server.lifecycle.engine import Engine
from orch8_server.problems import Problem
from orch8_server.storage import open_storage

log = logging.getLogger("orch8.server")

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        problem = Problem("not_found", f"no route {request.method} {request.url.path}")
    elif exc.status_code == 405:
        problem = Problem(
            "method_not_allowed",
            f"{request.method} is not allowed on {request.url.path}",
            headers=dict(exc.headers or {}),
        )
    else:
        problem = Problem("validation_error", str(exc.detail))
    return problem_response(problem, request)


async def _unexpected(request: Request, exc: Exception) -> Response:
    return internal_problem(request, exc)


def _routes() -> list[Route]:
    """The spec's operations, one Route per path dispatching on the method, so a 405 names
    every allowed method."""
    by_path: dict[str, dict[str, Endpoint]] = {}
    for op, handler in bound():
        by_path.setdefault(op.route_path, {})[op.method] = pipeline(op, handler)
    routes = []
    for path, handlers in by_path.items():
        if len(handlers) == 1:
            ((method, handler),) = handlers.items()
            routes.append(Route(path, handler, methods=[method]))
            continue

        async def dispatch(request: Request, handlers: dict[str, Endpoint] = handlers) -> Response:
            # Starlette answers 405 before this for methods not in `handlers`; HEAD is GET.
            handler = handlers.get(request.method) or handlers["GET"]
            return await handler(request)

        routes.append(Route(path, dispatch, methods=list(handlers)))
    return routes


def _until_connected(route: Route) -> Route:
    """P-OBS-6: until the database is connected, the route answers 503 `unavailable`
    with Retry-After (a function call per request, not a middleware hop)."""
    if route.path == "/health/live":
        return route
    handler: Endpoint = route.endpoint

    async def gated(request: Request) -> Response:
        engine: Engine = request.app.state.engine
        if engine.connected:
            return await handler(request)
        problem = Problem(
            "unavailable",
            "the database is not connected yet; the server keeps trying (see its log)",
            headers={"Retry-After": str(engine.retry_after_s)},
        )
        return problem_response(problem, request)

    return Route(route.path, gated, methods=list(route.methods or ()))


def create_app(
    settings: Settings,
    span_exporter: SpanExporter | None = None,
    keyring: KeyRing | None = None,
) -> Starlette:
    """The server's app. `span_exporter` (tests) receives the P-TEL-2 spans instead of
    the OTLP endpoint; with neither, OpenTelemetry is never imported. `keyring` is the
    launcher's (it reloads it on SIGHUP); without one, the settings' keys are read here."""
    timefmt.use_test_clock(settings.test_clock)  # P-CLOCK-1 (and off again for tests)
    if settings.test_clock:
        log.warning("test clock on: time stands still until POST /clock/advance moves it")
    storage = open_storage(
        settings.db,
        settings.sqlite_synchronous,
        pool_size=settings.pg_pool_size,
        acquire_timeout_ms=settings.pg_acquire_timeout_ms,
        notify_fallback_ms=settings.notify_fallback_ms,
        migrate=settings.migrate,
    )
    spans = None
    if settings.otlp_endpoint or span_exporter is not None:
        from orch8_server.tracing import ServerSpans

        spans = ServerSpans.create(settings, span_exporter)
    engine = build(settings, storage, spans)  # the composition root

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await engine.start()
        try:
            yield
        finally:
            await engine.stop()

    app = Starlette(exception_handlers={HTTPException: _http_error, Exception: _unexpected})
    # Set before the first request builds the middleware stack around `app.router`.
    app.router = IndexedRouter(
        [_until_connected(r) for r in [*_routes(), *ui.routes()]], lifespan=lifespan
    )
    app.state.engine = engine
    app.state.keyring = keyring or KeyRing(settings.api_keys, settings.keys_file)
    return app
