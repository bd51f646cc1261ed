"""P-SDK-24: the `tenant` option, 403 `ForbiddenError`, and a worker that outlives a refused key.

Unit level: respx and the scripted FakeServer (httpx.MockTransport); the isolation through
the real server is tests/integration/test_tenants.py.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import httpx
import pytest
import respx

import orch8
from orch8 import AsyncOrch8Client, Orch8Client, RetryPolicy, Worker

from .conftest import BASE, problem, task
from .fake_server import FakeServer, Running, wait_until


@pytest.fixture(autouse=True)
def no_env_tenant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORCH8_TENANT", raising=False)


def tenant_client(server: FakeServer, headers_seen: list[tuple[str, str, str | None]], **kw: Any):
    """An async client on the fake server that records each request's X-Tenant-Id."""

    def handle(request: httpx.Request) -> httpx.Response:
        headers_seen.append((request.method, request.url.path, request.headers.get("x-tenant-id")))
        return server.handle(request)

    return AsyncOrch8Client(
        BASE,
        transport=httpx.MockTransport(handle),
        retry=RetryPolicy(max_retries=1, base_delay_ms=1, max_delay_ms=2),
        **kw,
    )


def test_p_sdk_24_worker_sends_the_tenant_on_every_call_kind() -> None:
    """Registration, polls, heartbeats, results and deregistration all carry X-Tenant-Id."""
    server = FakeServer()
    server.add("t1")
    server.add("t2")
    seen: list[tuple[str, str, str | None]] = []
    worker = Worker(
        tenant_client(server, seen, tenant="team-a"),
        worker_id="w",
        handle_signals=False,
        wait_ms=100,
        heartbeat_interval_ms=20,
    )
    release = threading.Event()
    worker.register("process_image", lambda ctx: release.wait(10) and ctx.id)
    run = Running(worker)
    try:
        wait_until(lambda: any(p == "/workers/w/heartbeat" for _, p, _ in seen))
        release.set()
        wait_until(lambda: len(server.completed) == 2)
    finally:
        run.stop()
    kinds = {p for _, p, _ in seen}
    assert {
        "/workers",
        "/workers/tasks/poll/batch",
        "/workers/w/heartbeat",
        "/workers/tasks/complete/batch",
        "/workers/w",
    } <= kinds
    assert {t for _, _, t in seen} == {"team-a"}


def test_p_sdk_24_failures_and_single_calls_carry_the_tenant() -> None:
    async def calls() -> list[tuple[str, str, str | None]]:
        server = FakeServer()
        seen: list[tuple[str, str, str | None]] = []
        async with tenant_client(server, seen, tenant="team-a") as client:
            await client.fail_task("t1", lease_id="l1", error="boom")
            with pytest.raises(orch8.NotFoundError):
                await client.get_task("nope")
        return seen

    seen = asyncio.run(calls())
    assert [(p, t) for _, p, t in seen] == [
        ("/workers/tasks/t1/fail", "team-a"),
        ("/tasks/nope", "team-a"),
    ]


@respx.mock
def test_p_sdk_24_sync_client_header_and_none_without_tenant() -> None:
    route = respx.get(f"{BASE}/tasks/task_1").respond(200, json=task())
    Orch8Client(BASE, tenant="t1.prod_2-x").get_task("task_1")
    assert route.calls.last.request.headers["x-tenant-id"] == "t1.prod_2-x"
    Orch8Client(BASE).get_task("task_1")
    assert "x-tenant-id" not in route.calls.last.request.headers


@respx.mock
def test_p_sdk_24_tenant_falls_back_on_orch8_tenant(monkeypatch: pytest.MonkeyPatch) -> None:
    route = respx.post(f"{BASE}/tasks").respond(201, json=task())
    monkeypatch.setenv("ORCH8_TENANT", "from-env")
    Orch8Client(BASE).enqueue("process_image")
    assert route.calls.last.request.headers["x-tenant-id"] == "from-env"
    Orch8Client(BASE, tenant="given").enqueue("process_image")  # the argument wins
    assert route.calls.last.request.headers["x-tenant-id"] == "given"
    monkeypatch.setenv("ORCH8_TENANT", "")  # empty is unset, as ORCH8_API_KEY
    Orch8Client(BASE).enqueue("process_image")
    assert "x-tenant-id" not in route.calls.last.request.headers


@pytest.mark.parametrize("bad", ["", "team a", "a" * 65, "tëam", "a/b", 7])
def test_p_sdk_24_bad_tenant_is_refused_when_the_client_is_built(bad: Any) -> None:
    for build in (
        lambda: Orch8Client(BASE, tenant=bad),
        lambda: AsyncOrch8Client(BASE, tenant=bad),
        lambda: Worker(base_url=BASE, tenant=bad),
    ):
        with pytest.raises(ValueError, match="tenant"):
            build()


def test_p_sdk_24_bad_orch8_tenant_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH8_TENANT", "no spaces")
    with pytest.raises(ValueError, match="tenant"):
        Orch8Client(BASE)
    assert Orch8Client(BASE, tenant="a" * 64).tenant == "a" * 64
    assert AsyncOrch8Client(BASE, tenant="t1").tenant == "t1"


def test_p_sdk_24_worker_tenant_goes_with_its_own_client_only() -> None:
    with pytest.raises(ValueError, match="client"):
        Worker(AsyncOrch8Client(BASE), tenant="t1")


@respx.mock
def test_p_sdk_24_forbidden_is_never_retried() -> None:
    """403 on a call safe to repeat: ForbiddenError at once, one request."""
    route = respx.get(f"{BASE}/tasks/t1").respond(
        403, json=problem(403, "forbidden", 'key "p" (role producer) may not call getTask')
    )
    client = Orch8Client(BASE, retry=RetryPolicy(max_retries=3, base_delay_ms=1))
    with pytest.raises(orch8.ForbiddenError) as info:
        client.get_task("t1")
    assert route.call_count == 1
    assert isinstance(info.value, orch8.Orch8Error) and not orch8.is_outage(info.value)
    assert (info.value.status, info.value.code) == (403, "forbidden")
    assert "403 forbidden" in str(info.value)


@respx.mock
def test_p_sdk_24_a_bare_403_maps_by_status() -> None:
    respx.get(f"{BASE}/tasks/t1").respond(403, text="<html>Forbidden</html>")
    with pytest.raises(orch8.ForbiddenError):
        Orch8Client(BASE).get_task("t1")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_p_sdk_24_poll_refused_keeps_the_worker_running(caplog: pytest.LogCaptureFixture) -> None:
    """403 on polls: warned with status, code and detail, backed off, then claims once fixed."""
    server = FakeServer()
    server.add("t1")
    fixed = threading.Event()
    detail = 'key "w" (role worker) may not poll queue "default"'

    @server.route("POST", "/workers/tasks/poll/batch")
    def poll(request: httpx.Request, body: Any) -> httpx.Response:
        if fixed.is_set():
            return server.default(request.method, request.url.path, body)
        return httpx.Response(403, json=problem(403, "forbidden", detail))

    worker = server.worker()
    worker.register("process_image", lambda ctx: "done")
    with caplog.at_level(logging.WARNING, logger="orch8"):
        run = Running(worker)
        try:
            wait_until(lambda: worker.stats().poll_errors >= 3)
            assert run.thread.is_alive()
            fixed.set()  # the key fixed on the server (SIGHUP): no restart needed
            wait_until(lambda: server.completed == ["t1"])
        finally:
            run.stop()
    said = "poll refused, backing off"
    assert any(
        said in w and w.endswith(f": HTTP 403 forbidden: {detail}") for w in _warnings(caplog)
    )


def test_p_sdk_24_registration_refused_is_retried_until_the_key_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """401 at start: no crash, no poll before registration, registered once the key works."""
    server = FakeServer()
    server.add("t1")
    refusals = [401, 403, 401]

    @server.route("POST", "/workers")
    def register(request: httpx.Request, body: Any) -> httpx.Response:
        if refusals:
            status = refusals.pop(0)
            code = "unauthorized" if status == 401 else "forbidden"
            return httpx.Response(status, json=problem(status, code, f"{code} key"))
        return server.default(request.method, request.url.path, body)

    worker = server.worker()
    worker.register("process_image", lambda ctx: "done")
    errors: list[Any] = []
    worker.on_error(errors.append)
    with caplog.at_level(logging.WARNING, logger="orch8"):
        run = Running(worker)
        try:
            wait_until(lambda: server.completed == ["t1"])
        finally:
            run.stop()
    paths = [p for _, p, _ in server.requests]
    assert paths[:4] == ["/workers"] * 4, "no poll before the registration succeeded"
    warnings = _warnings(caplog)
    refused = [w for w in warnings if w.startswith("orch8: registration refused, retrying in ")]
    assert any(w.endswith(": HTTP 401 unauthorized: unauthorized key") for w in refused), warnings
    assert any(w.endswith(": HTTP 403 forbidden: forbidden key") for w in refused), warnings
    assert [type(e.error) for e in errors[:3]] == [
        orch8.AuthError,
        orch8.ForbiddenError,
        orch8.AuthError,
    ]


def test_p_sdk_24_a_rejected_registration_is_still_fatal() -> None:
    """Only 401/403 became non-fatal: a 422 registration still fails run()."""
    server = FakeServer()

    @server.route("POST", "/workers")
    def register(request: httpx.Request, body: Any) -> httpx.Response:
        return httpx.Response(422, json=problem(422, "validation_error"))

    worker = server.worker()
    worker.register("process_image", lambda ctx: "done")
    run = Running(worker)
    with pytest.raises(orch8.ValidationError):
        run.join()
