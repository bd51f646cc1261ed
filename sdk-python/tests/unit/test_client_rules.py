"""The client's Retry-After budget (P-SDK-2), URL check (P-SDK-1) and transport errors (P-SDK-22)."""

from __future__ import annotations

import asyncio
import logging
import socket
import types
from typing import Any

import httpx
import pytest
import respx

import orch8
from orch8 import AsyncOrch8Client, Orch8Client, RetryPolicy, Worker
from orch8 import async_client as async_client_module
from orch8 import client as client_module

from .conftest import BASE, problem, task
from .fake_server import wait_until


class Sleeps:
    """Stands in for the clients' sleep: records each delay (seconds) and returns at once."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.seconds.append(seconds)

    async def async_sleep(self, seconds: float) -> None:
        self.seconds.append(seconds)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> Sleeps:
    """Both clients' waits between retries, recorded instead of slept (no 30 s test)."""
    fake = Sleeps()
    monkeypatch.setattr(client_module, "time", types.SimpleNamespace(sleep=fake.sleep))
    monkeypatch.setattr(
        async_client_module, "asyncio", types.SimpleNamespace(sleep=fake.async_sleep)
    )
    return fake


def flood(n: int | None) -> list[httpx.Response]:
    """`n` answers 429 `rate_limited` with `Retry-After: 1` (60 when None: sustained)."""
    answer = problem(429, "rate_limited", "enqueue rate exceeded")
    return [httpx.Response(429, json=answer, headers={"Retry-After": "1"})] * (n or 60)


# --- P-SDK-2: Retry-After answers are retried within a 30 s budget ---------------------------


def test_p_sdk_2_idempotent_enqueue_rides_out_five_retry_after_answers(sleeps: Sleeps) -> None:
    """Five 429s with Retry-After: 1, then 201: more than the 3 retries of plain outages."""
    with respx.mock:
        route = respx.post(f"{BASE}/tasks")
        route.side_effect = [*flood(5), httpx.Response(201, json=task("t1"))]
        got = Orch8Client(BASE).enqueue("h", idempotency_key="k1")
    assert got.id == "t1" and route.call_count == 6
    assert len(sleeps.seconds) == 5 and all(1.0 <= s <= 1.1 for s in sleeps.seconds)


def test_p_sdk_2_sustained_flood_stops_once_the_30_s_budget_is_spent(sleeps: Sleeps) -> None:
    """Retry-After: 1 for ever: 30 retries (30 s asked for), then the last 429 surfaces."""
    with respx.mock:
        route = respx.post(f"{BASE}/tasks")
        route.side_effect = flood(None)
        with pytest.raises(orch8.RateLimitedError) as info:
            Orch8Client(BASE).enqueue("h", idempotency_key="k1")
    assert route.call_count == 31 and len(sleeps.seconds) == 30
    assert 30.0 <= sum(sleeps.seconds) <= 33.0  # each delay is 1 s plus 0-10% (P-SDK-16)
    assert info.value.retry_after_ms == 1000


def test_p_sdk_2_async_client_has_the_same_budget(sleeps: Sleeps) -> None:
    async def main() -> tuple[int, str | None]:
        async with AsyncOrch8Client(BASE) as client:
            with pytest.raises(orch8.RateLimitedError) as info:
                await client.enqueue("h", idempotency_key="k1")
        return route.call_count, info.value.code

    with respx.mock:
        route = respx.post(f"{BASE}/tasks")
        route.side_effect = flood(None)
        assert asyncio.run(main()) == (31, "rate_limited")
    assert len(sleeps.seconds) == 30


def test_p_sdk_2_outages_without_retry_after_keep_three_retries(sleeps: Sleeps) -> None:
    with respx.mock:
        route = respx.get(f"{BASE}/tasks/t1").respond(503, json=problem(503, "unavailable"))
        with pytest.raises(orch8.UnavailableError):
            Orch8Client(BASE).get_task("t1")
    assert route.call_count == 4 and all(s <= 5.0 for s in sleeps.seconds)


def test_p_sdk_2_retry_after_0_counts_against_the_three_retries(sleeps: Sleeps) -> None:
    """`Retry-After: 0` for ever adds nothing to the budget: it must not retry for ever."""
    answer = httpx.Response(503, json=problem(503, "unavailable"), headers={"Retry-After": "0"})
    with respx.mock:
        route = respx.get(f"{BASE}/tasks/t1")
        route.side_effect = [answer] * 10
        with pytest.raises(orch8.UnavailableError):
            Orch8Client(BASE).get_task("t1")
    assert route.call_count == 4


def test_p_sdk_2_retry_after_budget_never_retries_unsafe_calls(sleeps: Sleeps) -> None:
    """An enqueue without idempotency key is `never` retried, Retry-After or not."""
    with respx.mock:
        route = respx.post(f"{BASE}/tasks")
        route.side_effect = flood(None)
        with pytest.raises(orch8.RateLimitedError):
            Orch8Client(BASE).enqueue("h")
    assert route.call_count == 1 and sleeps.seconds == []


def test_p_sdk_16_a_retry_after_of_exactly_30_s_is_waited_for_once(sleeps: Sleeps) -> None:
    """30 s fits the budget once; a second 30 s would pass it; over 30 s is never waited."""
    answer = httpx.Response(503, json=problem(503, "unavailable"), headers={"Retry-After": "30"})
    with respx.mock:
        route = respx.get(f"{BASE}/tasks/t1")
        route.side_effect = [answer, answer, answer]
        with pytest.raises(orch8.UnavailableError):
            Orch8Client(BASE).get_task("t1")
    assert route.call_count == 2 and len(sleeps.seconds) == 1


# --- P-SDK-1: the base URL is checked when the client is built -------------------------------

BAD_URLS = ["127.0.0.1:3001", "localhost", "localhost:3001", "ftp://x", "", "http://", "http://h:x"]


@pytest.mark.parametrize("url", BAD_URLS)
def test_p_sdk_1_a_url_that_is_not_absolute_http_is_refused_at_build(url: str) -> None:
    for build in (Orch8Client, AsyncOrch8Client, lambda u: Worker(base_url=u)):
        with pytest.raises(ValueError, match="absolute http") as info:
            build(url)
        assert repr(url) in str(info.value)


def test_p_sdk_1_orch8_url_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH8_URL", "127.0.0.1:3001")
    with pytest.raises(ValueError, match=r"ORCH8_URL .*'127\.0\.0\.1:3001'"):
        Orch8Client()
    with pytest.raises(ValueError, match="ORCH8_URL"):
        Worker(handle_signals=False)
    monkeypatch.setenv("ORCH8_URL", "")  # empty is unset: the default
    assert Orch8Client().config.base_url == "http://localhost:3001"


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:3001", "https://orch8.example/api/", "http://[::1]:1"]
)
def test_p_sdk_1_absolute_http_urls_are_accepted(url: str) -> None:
    assert Orch8Client(url).config.base_url == url.rstrip("/")


# --- P-SDK-22: a transport error names the URL and its innermost cause -----------------------


def refused_port() -> int:
    """A local port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_p_sdk_22_connection_error_names_url_and_innermost_cause() -> None:
    url = f"http://127.0.0.1:{refused_port()}"
    with pytest.raises(orch8.UnavailableError) as info:
        Orch8Client(url, retry=RetryPolicy(max_retries=0)).get_task("t1")
    text = str(info.value)
    assert info.value.code == "connection_error"
    assert f"GET {url}/tasks/t1" in text
    assert "ConnectionRefusedError" in text and "ECONNREFUSED" in text


def test_p_sdk_22_worker_log_names_the_url_on_transport_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """D6: the register warning names the server URL and `connection refused`, not only httpx."""
    url = f"http://127.0.0.1:{refused_port()}"
    client = AsyncOrch8Client(url, retry=RetryPolicy(max_retries=0))
    worker = Worker(client, handle_signals=False, outage_backoff_ms=(5, 20))
    worker.register("h", lambda ctx: None)
    from .fake_server import Running

    with caplog.at_level(logging.WARNING, logger="orch8"):
        run = Running(worker)
        try:
            wait_until(lambda: any("registration" in r.getMessage() for r in caplog.records))
        finally:
            run.stop()
    record = next(r for r in caplog.records if "registration" in r.getMessage())
    line = record.getMessage()
    assert f"{url}/workers" in line and "ECONNREFUSED" in line, line
    # P-SDK-31: an `outage` line whose fields name the operation, the URL and the cause
    fields = vars(record)
    assert (fields["event"], fields["operation"], fields["url"]) == ("outage", "register", url)
    assert fields["cause"].startswith("connection_error: ") and line.endswith(fields["cause"])


def test_p_sdk_22_problem_text_has_status_code_and_detail() -> None:
    err: Any = orch8.Orch8Error("queue q is paused", status=422, code="validation_error")
    assert str(err) == "queue q is paused (422 validation_error)"
