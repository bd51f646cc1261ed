"""Route lookup by the path's first segment instead of a scan of every route.

Starlette's Router tries each route's regex in order until one matches. With the spec's
40 paths mounted in spec order, the worker's hot paths (`/workers/tasks/poll`,
`/workers/tasks/{task_id}/complete`) came about thirtieth: at batch 1 that scan was ~2.5%
of the server's CPU (py-spy, bench/results/2026-11-27-core-redesign-ab.md). Every route
starts with a literal segment, so only routes sharing the request's first segment can
match; they are tried in their original order, except that a concrete path comes before
a templated one, as OpenAPI matches paths: a request for `/instances/batch` is about that
path whatever its method, so `GET /instances/batch` is 405 (Allow: POST), not a
`getInstance` of the id "batch" (Starlette's scan prefers any full match). A request that
none of them matches (405 on a templated path, 404, trailing-slash redirect) goes to
Starlette's own scan, unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import Receive, Scope, Send


def first_segment(path: str) -> str:
    return path[1:].partition("/")[0]


class IndexedRouter(Router):
    def __init__(self, routes: Sequence[BaseRoute], **kwargs: object) -> None:
        super().__init__(list(routes), **kwargs)  # type: ignore[arg-type]
        index: dict[str, list[BaseRoute]] | None = {}
        for route in self.routes:
            segment = first_segment(route.path) if isinstance(route, Route) else "{"
            if "{" in segment:  # a route that can match any first segment: scan them all
                index = None
                break
            assert index is not None
            index.setdefault(segment, []).append(route)
        for bucket in (index or {}).values():  # concrete paths first (stable: else as given)
            bucket.sort(key=lambda r: isinstance(r, Route) and "{" in r.path)
        self._index = index

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._index is None:
            return await super().app(scope, receive, send)
        for route in self._index.get(first_segment(get_route_path(scope)), ()):
            match, child_scope = route.matches(scope)
            if match is Match.FULL or (
                match is Match.PARTIAL and isinstance(route, Route) and "{" not in route.path
            ):  # a concrete path with another method: its 405, with its Allow header
                scope.setdefault("router", self)
                scope["route"] = route
                scope.update(child_scope)
                return await route.handle(scope, receive, send)
        # No full match: 405 (the path with another method), 404 or a trailing-slash
        # redirect, all rare; Starlette's scan of every route answers them as before.
        return await super().app(scope, receive, send)
