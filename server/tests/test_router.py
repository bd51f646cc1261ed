"""The indexed router picks exactly the route and answer Starlette's own scan would, but
for one rule of OpenAPI's: a concrete path is matched before a templated one, so a
request for a concrete path with another method is that path's 405 (`GET /tasks/batch`),
where Starlette's scan takes the templated route's full match (`GET /tasks/{task_id}`).

Each of the app's routes is replaced by an endpoint that names itself; both routers then
answer the same requests: every path of the spec with its parameters filled in (queue
names with a slash, where the `:path` convertor matters), every method on each (405s),
literal paths that a parameter route would also match (`/tasks/batch`), unknown paths
(404) and trailing slashes (Starlette's redirect).
"""

from __future__ import annotations

import re

import pytest
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route, Router
from starlette.testclient import TestClient

from orch8_server.http import ui
from orch8_server.http.app import _routes
from orch8_server.http.router import IndexedRouter

METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE"]


def _named(route: Route) -> Route:
    async def endpoint(request: Request) -> Response:
        params = ",".join(f"{k}={v}" for k, v in sorted(request.path_params.items()))
        return PlainTextResponse(f"{route.path} {request.method} {params}")

    return Route(route.path, endpoint, methods=sorted(route.methods or ()))


def _routes_named() -> list[Route]:
    return [_named(r) for r in [*_routes(), *ui.routes()]]


def _sample_paths(routes: list[Route]) -> list[str]:
    paths = {"/", "/nope", "/tasks/", "/workers/tasks/", "/ui", "/tasks/a/b", "/queues/"}
    for route in routes:
        for value in ("x", "a/b"):
            path = re.sub(r"\{[^}]+\}", value, route.path)
            paths.update({path, path + "/"})
    return sorted(paths)


def _answers(router: Router, paths: list[str]) -> list[tuple[str, str, int, str, str]]:
    out = []
    # Entered once: outside a `with`, every request starts and stops its own event loop.
    with TestClient(router, follow_redirects=False) as client:
        for path in paths:
            for method in METHODS:
                r = client.request(method, path)
                out.append((method, path, r.status_code, r.headers.get("location", ""), r.text))
    return out


def test_the_app_has_no_route_that_disables_the_index() -> None:
    assert IndexedRouter(_routes_named())._index is not None


def _concrete_first(
    routes: list[Route], answers: list[tuple[str, str, int, str, str]]
) -> list[tuple[str, str, int, str, str]]:
    """Starlette's answers with OpenAPI's precedence applied: another method on a concrete
    path is that path's 405."""
    methods = {r.path: r.methods or set() for r in routes if "{" not in r.path}
    not_allowed = {"HEAD": ""}  # a HEAD answer has no body
    return [
        (m, p, 405, "", not_allowed.get(m, "Method Not Allowed"))
        if p in methods and m not in methods[p]
        else (m, p, *rest)
        for m, p, *rest in answers
    ]


def test_every_request_gets_the_answer_of_starlettes_scan_but_concrete_paths_first() -> None:
    routes = _routes_named()
    paths = _sample_paths(routes)
    indexed = _answers(IndexedRouter(routes), paths)
    scanned = _answers(Router(routes), paths)
    expected = _concrete_first(routes, scanned)
    assert indexed == expected
    changed = {a[:2] for a, b in zip(scanned, expected, strict=True) if a != b}
    assert {("GET", "/tasks/batch"), ("GET", "/instances/batch")} <= changed
    statuses = {status for _, _, status, _, _ in indexed}
    assert {200, 404, 405} <= statuses and (307 in statuses or 308 in statuses)


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/tasks/batch", "/tasks/batch POST "),
        ("GET", "/tasks/x", "/tasks/{task_id} GET task_id=x"),
        ("POST", "/workers/tasks/poll", "/workers/tasks/poll POST "),
        ("POST", "/workers/tasks/t1/complete", "/workers/tasks/{task_id}/complete POST task_id=t1"),
        ("POST", "/queues/a/b/pause", "/queues/{queue_name:path}/pause POST queue_name=a/b"),
    ],
)
def test_precedence_between_literal_and_parameter_routes(
    method: str, path: str, expected: str
) -> None:
    response = TestClient(IndexedRouter(_routes_named())).request(method, path)
    assert response.status_code == 200 and response.text == expected


@pytest.mark.parametrize("path", ["/tasks/batch", "/instances/batch"])
def test_another_method_on_a_concrete_path_is_its_405_not_a_templated_route(path: str) -> None:
    """OpenAPI: `/instances/batch` is matched before `/instances/{instance_id}`, so GET
    there is 405 with `Allow: POST` (schemathesis ST204), not a getInstance of "batch"."""
    response = TestClient(IndexedRouter(_routes_named())).get(path)
    assert response.status_code == 405 and response.headers["allow"] == "POST"


def test_every_route_is_found_without_starlettes_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the index: a request for an existing route and method never scans."""
    routes = _routes_named()
    client = TestClient(IndexedRouter(routes))

    async def scan(*args: object) -> None:
        raise AssertionError("Starlette's scan of every route was used")

    monkeypatch.setattr(Router, "app", scan)
    for route in routes:
        path = re.sub(r"\{[^}]+\}", "a/b" if ":path" in route.path else "x", route.path)
        for method in sorted(route.methods or ()):
            response = client.request(method, path)
            assert response.status_code == 200, (method, path)
