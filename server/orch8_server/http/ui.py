"""The operator dashboard: static files under /ui/, and / redirecting there.

The files are built by server/dashboard (`make -C server/dashboard generate`) and committed
in orch8_server/ui, so the server needs no build step. They are served without an API key:
the page holds no data; every call it makes goes through the public API, which asks for
the key when the server has keys (P-AUTH-1).
"""

from __future__ import annotations

import hashlib
from importlib import resources

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from orch8_server.http.endpoint import problem_response
from orch8_server.problems import Problem

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}

# Same origin only: the page loads nothing from outside and talks to this server alone.
# Inline styles set through the CSSOM are allowed by CSP; style attributes and inline
# scripts are not, and the bundle uses neither.
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def _load() -> dict[str, tuple[bytes, str, str]]:
    """name -> (body, media type, etag) for every servable file of the bundle."""
    files: dict[str, tuple[bytes, str, str]] = {}
    folder = resources.files("orch8_server") / "ui"
    if not folder.is_dir():
        return files
    for entry in folder.iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.name.startswith(".") or suffix not in _TYPES:
            continue
        body = entry.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
        files[entry.name] = (body, _TYPES[suffix], etag)
    return files


def routes() -> list[Route]:
    files = _load()

    async def asset(request: Request) -> Response:
        name = request.path_params.get("name") or "index.html"
        if name not in files:
            return problem_response(Problem("not_found", f"no dashboard file {name!r}"), request)
        body, media_type, etag = files[name]
        headers = {
            # Revalidate every time: the bundle's names carry no hash, so a stale cache
            # would mix an old app.js with a new server.
            "Cache-Control": "no-cache",
            "ETag": etag,
            "Content-Security-Policy": _CSP,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        }
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(body, media_type=media_type, headers=headers)

    async def to_dashboard(request: Request) -> Response:
        return RedirectResponse("/ui/", status_code=307)

    return [
        Route("/", to_dashboard, methods=["GET"]),
        Route("/ui", to_dashboard, methods=["GET"]),
        Route("/ui/", asset, methods=["GET"]),
        Route("/ui/{name}", asset, methods=["GET"]),
    ]
