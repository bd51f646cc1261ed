"""Problem codes mapped to exceptions (section 12) and safe automatic retries (P-SDK-2)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx
import pytest
import respx

import orch8
from orch8 import Orch8Client, RetryPolicy
from orch8._http import parse_retry_after_ms
from orch8.errors import OUTAGE_STATUSES

from .conftest import BASE, outcome, problem, task

CASES = [
    (400, "malformed_json", orch8.ValidationError),
    (400, "payload_too_deep", orch8.ValidationError),  # P-ERR-5
    (400, "unsupported_value", orch8.ValidationError),  # P-ERR-5
    (408, "request_timeout", orch8.UnavailableError),  # P-HTTP-2: an outage
    (401, "unauthorized", orch8.AuthError),
    (403, "forbidden", orch8.ForbiddenError),  # P-SDK-24
    (404, "not_found", orch8.NotFoundError),
    (405, "method_not_allowed", orch8.Orch8Error),
    (409, "lease_lost", orch8.LeaseLostError),
    (409, "task_cancelled", orch8.TaskCancelledError),
    (409, "invalid_state", orch8.ConflictError),
    (409, "clock_not_controllable", orch8.ConflictError),  # P-CLOCK-1
    (413, "payload_too_large", orch8.ValidationError),
    (415, "unsupported_media_type", orch8.ValidationError),
    (422, "validation_error", orch8.ValidationError),
    (429, "rate_limited", orch8.RateLimitedError),
    (431, "headers_too_large", orch8.ValidationError),  # P-HTTP-1
    (503, "unavailable", orch8.UnavailableError),
    (500, "internal", orch8.Orch8Error),
]


@pytest.mark.parametrize(("status", "code", "cls"), CASES)
def test_problem_code_maps_to_exception(status: int, code: str, cls: type) -> None:
    no_retry = RetryPolicy(max_retries=0)
    with respx.mock:
        respx.post(f"{BASE}/workers/tasks/t1/complete").respond(
            status,
            json=problem(status, code, "why"),
            headers={"content-type": "application/problem+json"},
        )
        with pytest.raises(orch8.Orch8Error) as info:
            Orch8Client(BASE, retry=no_retry).complete_task("t1", output=1)
    assert type(info.value) is cls
    assert (info.value.status, info.value.code, info.value.detail) == (status, code, "why")


def test_every_code_of_the_contract_has_a_case() -> None:
    """Section 12: the table above covers openapi.yaml's whole `x-orch8-codes` catalogue."""
    # scripts/runtimes.py runs a copy of these tests outside the repo and names the spec;
    # read as text there (the consumer project has no YAML parser).
    default = Path(__file__).resolve().parents[3] / "openapi.yaml"
    spec = Path(os.environ.get("ORCH8_SPEC") or default).read_text()
    block = re.search(r"^( +)x-orch8-codes:\n((?:\1 +\w+: .*\n)+)", spec, flags=re.M)
    assert block is not None, "openapi.yaml has no x-orch8-codes map"
    codes = re.findall(r"^ +(\w+): ", block.group(2), flags=re.M)
    assert len(codes) >= 18
    assert sorted(codes) == sorted(code for _, code, _ in CASES)


@pytest.mark.parametrize(
    ("status", "cls"), [(408, orch8.UnavailableError), (431, orch8.ValidationError)]
)
def test_a_body_without_code_maps_408_and_431_by_status(status: int, cls: type) -> None:
    """A proxy's 408 (an outage, P-SDK-16) or 431 without a problem body."""
    with respx.mock:
        respx.get(f"{BASE}/tasks/t1").respond(status, text="<html>no</html>")
        with pytest.raises(orch8.Orch8Error) as info:
            Orch8Client(BASE, retry=RetryPolicy(max_retries=0)).get_task("t1")
    assert type(info.value) is cls and info.value.status == status


def test_validation_error_keeps_field_pointers() -> None:
    body = problem(422, "validation_error")
    body["errors"] = [{"pointer": "/priority", "detail": "must be integer"}]
    with respx.mock:
        respx.post(f"{BASE}/tasks").respond(422, json=body)
        with pytest.raises(orch8.ValidationError) as info:
            Orch8Client(BASE).enqueue("h", priority=1)
    assert info.value.errors == [{"pointer": "/priority", "detail": "must be integer"}]


def test_non_json_error_body_maps_by_status(fast_retry: RetryPolicy) -> None:
    with respx.mock:
        respx.get(f"{BASE}/tasks/t1").respond(502, text="<html>bad gateway</html>")
        with pytest.raises(orch8.UnavailableError) as info:
            Orch8Client(BASE, retry=fast_retry).get_task("t1")
    assert info.value.status == 502 and info.value.code is None


def test_safe_call_retried_until_success(fast_retry: RetryPolicy) -> None:
    with respx.mock:
        route = respx.post(f"{BASE}/workers/tasks/t1/complete")
        route.side_effect = [
            httpx.Response(503, json=problem(503, "unavailable")),
            httpx.ConnectError("refused"),
            httpx.Response(200, json=outcome("t1")),
        ]
        got = Orch8Client(BASE, retry=fast_retry).complete_task("t1", output=1)
    assert got.status == "completed" and route.call_count == 3


def test_safe_call_gives_up_after_three_retries(fast_retry: RetryPolicy) -> None:
    with respx.mock:
        route = respx.get(f"{BASE}/tasks/t1").mock(side_effect=httpx.ConnectError("refused"))
        with pytest.raises(orch8.UnavailableError) as info:
            Orch8Client(BASE, retry=fast_retry).get_task("t1")
    assert info.value.code == "connection_error"
    assert route.call_count == 4  # the first try and 3 retries


@pytest.mark.parametrize("status", [400, 404, 409, 413, 422, 501])
def test_non_transient_status_not_retried(status: int, fast_retry: RetryPolicy) -> None:
    with respx.mock:
        route = respx.get(f"{BASE}/tasks/t1").respond(status, json=problem(status, "x"))
        with pytest.raises(orch8.Orch8Error):
            Orch8Client(BASE, retry=fast_retry).get_task("t1")
    assert route.call_count == 1


def test_unsafe_calls_not_retried(fast_retry: RetryPolicy) -> None:
    client = Orch8Client(BASE, retry=fast_retry)
    calls = {
        "poll": ("post", "/workers/tasks/poll", lambda: client.poll_task(wait_ms=0)),
        "poll_batch": ("post", "/workers/tasks/poll/batch", lambda: client.poll_tasks(wait_ms=0)),
        "enqueue": ("post", "/tasks", lambda: client.enqueue("h")),
        "cancel": ("post", "/tasks/t1/cancel", lambda: client.cancel_task("t1")),
        "retry": ("post", "/tasks/t1/retry", lambda: client.retry_task("t1")),
    }
    for name, (method, path, invoke) in calls.items():
        with respx.mock:
            route = respx.route(method=method.upper(), url=f"{BASE}{path}").respond(
                503, json=problem(503, "unavailable")
            )
            with pytest.raises(orch8.UnavailableError):
                invoke()
            assert route.call_count == 1, name


def test_enqueue_with_idempotency_key_is_retried(fast_retry: RetryPolicy) -> None:
    with respx.mock:
        route = respx.post(f"{BASE}/tasks")
        route.side_effect = [httpx.ConnectError("reset"), httpx.Response(200, json=task("t2"))]
        got = Orch8Client(BASE, retry=fast_retry).enqueue("h", idempotency_key="k1")
    assert got.id == "t2" and route.call_count == 2


def test_retry_after_header_is_honoured() -> None:
    assert parse_retry_after_ms("2") == 2000.0
    assert parse_retry_after_ms(None) is None
    policy = RetryPolicy(max_retries=3, base_delay_ms=1, max_delay_ms=2)
    # P-SDK-16: Retry-After plus 0-10% replaces the computed delay.
    samples = [policy.delay_ms(0, retry_after_ms=1500) for _ in range(100)]
    assert all(1500 <= s <= 1650 for s in samples) and len(set(samples)) > 1


def test_outage_classifier_is_one_set() -> None:
    """P-SDK-16: refused/reset connection, timeout, 408, 429, 500, 502, 503, 504."""
    assert sorted(OUTAGE_STATUSES) == [408, 429, 500, 502, 503, 504]
    assert orch8.is_outage(httpx.ConnectError("refused"))
    assert orch8.is_outage(httpx.ReadTimeout("slow"))
    assert orch8.is_outage(orch8.UnavailableError("x", code="connection_error"))
    assert orch8.is_outage(orch8.Orch8Error("x", status=408))
    assert not orch8.is_outage(orch8.ValidationError("x", status=413))
    assert not orch8.is_outage(orch8.Orch8Error("x", status=501))
    assert not orch8.is_outage(ValueError("not a call"))


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
def test_every_outage_status_is_retried(status: int, fast_retry: RetryPolicy) -> None:
    with respx.mock:
        route = respx.get(f"{BASE}/tasks/t1")
        route.side_effect = [httpx.Response(status), httpx.Response(200, json=task("t1"))]
        assert Orch8Client(BASE, retry=fast_retry).get_task("t1").id == "t1"
    assert route.call_count == 2


def test_long_retry_after_surfaces_the_error(fast_retry: RetryPolicy) -> None:
    """P-SDK-16: no automatic retry past a 30 s Retry-After; the error carries the delay."""
    with respx.mock:
        route = respx.get(f"{BASE}/tasks/t1").respond(
            503, json=problem(503, "unavailable"), headers={"Retry-After": "31"}
        )
        with pytest.raises(orch8.UnavailableError) as info:
            Orch8Client(BASE, retry=fast_retry).get_task("t1")
    assert route.call_count == 1
    assert info.value.retry_after_ms == 31000


def test_short_retry_after_waits_that_long(fast_retry: RetryPolicy) -> None:
    with respx.mock:
        route = respx.get(f"{BASE}/tasks/t1")
        route.side_effect = [
            httpx.Response(429, headers={"Retry-After": "0.2"}),
            httpx.Response(200, json=task("t1")),
        ]
        import time

        started = time.monotonic()
        Orch8Client(BASE, retry=fast_retry).get_task("t1")
        waited = time.monotonic() - started
    assert 0.2 <= waited < 1.0 and route.call_count == 2


def test_default_backoff_is_full_jitter_capped() -> None:
    policy = RetryPolicy()
    assert (policy.max_retries, policy.base_delay_ms, policy.max_delay_ms) == (3, 200, 5000)
    samples = [policy.delay_ms(10) for _ in range(200)]
    assert all(0 <= s <= 5000 for s in samples) and max(samples) > 2500
    assert all(0 <= policy.delay_ms(0) <= 200 for _ in range(100))


def test_seconds_keywords_still_work_with_a_warning() -> None:
    """Decisions C: the 0.1 float-second keywords stay for one minor version."""
    with pytest.warns(DeprecationWarning, match="_delay_ms"):
        policy = RetryPolicy(base_delay=0.05, max_delay=0.2)
    assert (policy.base_delay_ms, policy.max_delay_ms) == (50, 200)
    with pytest.warns(DeprecationWarning, match="timeout_ms"):
        client = Orch8Client(BASE, timeout=2.5)
    assert client.config.timeout_ms == 2500
    with pytest.warns(DeprecationWarning, match="retry_after_ms"):
        err = orch8.RetryableError("x", retry_after=1.5)
    assert err.retry_after_ms == 1500


def test_status_classifier() -> None:
    assert [orch8.is_retryable_status(s) for s in (408, 429, 500, 503, 599)] == [True] * 5
    assert [orch8.is_retryable_status(s) for s in (400, 401, 404, 409, 422)] == [False] * 5
    assert isinstance(orch8.error_for_status(503), orch8.RetryableError)
    err = orch8.error_for_status(404, "gone")
    assert isinstance(err, orch8.PermanentError) and str(err) == "gone"
    assert err.code == "permanent_error" and err.details == {"http_status": 404}
