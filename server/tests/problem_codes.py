"""The emitted-code check (issue 19): every problem `code` the server answers with during the
test session must be a key of `x-orch8-codes` on `Problem.code` in openapi.yaml.

Two sources feed one record: every httpx response seen in this process (whole problem+json
answers), and, before each server is stopped, its `orch8_problems_total{code}` counter
(which also counts batch-item problems and answers to clients outside this process, such
as schemathesis and curl). At the end of the session an undeclared code fails the run.
Hooked in by conftest.py.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from orch8_server.testing import RunningServer

REPO = Path(__file__).resolve().parents[2]
_METRIC = re.compile(r'^orch8_problems_total\{code="([^"]+)"\} ([0-9.e+]+)$', re.M)

# code -> where it was first seen
seen: dict[str, str] = {}


@functools.cache  # callers ask once per code
def declared_codes() -> dict[str, str]:
    """The x-orch8-codes map of Problem.code (code -> meaning)."""
    spec = yaml.load((REPO / "openapi.yaml").read_text(), Loader=yaml.CSafeLoader)
    return spec["components"]["schemas"]["Problem"]["properties"]["code"]["x-orch8-codes"]


def record(code: str, where: str) -> None:
    seen.setdefault(code, where)


def record_response(response: httpx.Response) -> None:
    if not response.headers.get("content-type", "").startswith("application/problem+json"):
        return
    try:
        code = response.json().get("code")
    except (httpx.ResponseNotRead, ValueError):
        return
    request = response.request
    record(str(code), f"{request.method} {request.url.path} -> {response.status_code}")


def record_server(server: RunningServer) -> None:
    """Fold a live server's problem counter into the record (call before stopping it)."""
    if not server.running:
        return
    try:
        text = httpx.get(server.url + "/metrics", timeout=5).text
    except httpx.TransportError:
        return
    for code, count in _METRIC.findall(text):
        if float(count) > 0:
            record(code, f"server {server.url} (orch8_problems_total)")


def _wrap(send: Any) -> Any:
    def wrapped(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        response = send(self, request, **kwargs)
        record_response(response)
        return response

    return wrapped


def _wrap_async(send: Any) -> Any:
    async def wrapped(
        self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any
    ) -> httpx.Response:
        response = await send(self, request, **kwargs)
        record_response(response)
        return response

    return wrapped


def pytest_sessionstart(session: pytest.Session) -> None:
    httpx.Client.send = _wrap(httpx.Client.send)  # type: ignore[method-assign]
    httpx.AsyncClient.send = _wrap_async(httpx.AsyncClient.send)  # type: ignore[method-assign]


def undeclared() -> dict[str, str]:
    known = declared_codes()
    return {code: where for code, where in seen.items() if code not in known}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if undeclared() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not seen:
        return
    bad = undeclared()
    if bad:
        terminalreporter.section("emitted problem codes", red=True)
        for code, where in sorted(bad.items()):
            terminalreporter.write_line(
                f"UNDECLARED problem code {code!r} (first seen: {where}); "
                "add it to x-orch8-codes in openapi.yaml or stop emitting it",
                red=True,
            )
    else:
        terminalreporter.write_line(
            f"emitted problem codes, all declared in x-orch8-codes: {', '.join(sorted(seen))}"
        )
