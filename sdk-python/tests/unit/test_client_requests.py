"""Request shapes and headers of Orch8Client (respx mock transport)."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

import orch8
from orch8 import AsyncOrch8Client, Orch8Client

from .conftest import BASE, claimed_task, outcome, task


def body(call: respx.models.Call) -> dict:
    return json.loads(call.request.content)


@respx.mock
def test_poll_task_sends_seed_body_and_headers() -> None:
    route = respx.post(f"{BASE}/workers/tasks/poll").respond(200, json=claimed_task())
    client = Orch8Client(BASE, api_key="secret")
    got = client.poll_task(handler_names=["process_image"], worker_id="img-worker-1")
    assert got is not None and got.id == "task_1" and got.lease.id == "lease_1"
    req = route.calls.last.request
    assert body(route.calls.last) == {
        "handler_names": ["process_image"],
        "worker_id": "img-worker-1",
    }
    assert req.headers["user-agent"] == f"orch8-python/{orch8.__version__}"
    assert req.headers["authorization"] == "Bearer secret"
    assert req.headers["content-type"] == "application/json"


@respx.mock
def test_poll_task_returns_none_on_204() -> None:
    respx.post(f"{BASE}/workers/tasks/poll").respond(204)
    assert Orch8Client(BASE).poll_task(wait_ms=0) is None


@respx.mock
def test_long_poll_timeout_is_wait_ms_plus_ten_seconds() -> None:
    route = respx.post(f"{BASE}/workers/tasks/poll/batch").respond(
        200, json={"tasks": [], "next_poll_after_ms": 0}
    )
    client = Orch8Client(BASE)
    client.poll_tasks(wait_ms=2000, batch_size=3)
    timeout = route.calls.last.request.extensions["timeout"]
    assert timeout["read"] == pytest.approx(12.0)
    assert body(route.calls.last) == {"wait_ms": 2000, "batch_size": 3}
    client.poll_tasks()  # default wait_ms 30000 -> 40 s
    assert route.calls.last.request.extensions["timeout"]["read"] == pytest.approx(40.0)


@respx.mock
def test_ordinary_request_timeout_defaults_to_ten_seconds() -> None:
    route = respx.get(f"{BASE}/tasks/task_1").respond(200, json=task())
    Orch8Client(BASE).get_task("task_1")
    assert route.calls.last.request.extensions["timeout"]["read"] == pytest.approx(10.0)


@respx.mock
def test_complete_fail_heartbeat_release_bodies() -> None:
    complete = respx.post(f"{BASE}/workers/tasks/t1/complete").respond(200, json=outcome("t1"))
    fail = respx.post(f"{BASE}/workers/tasks/t1/fail").respond(200, json=outcome("t1", "scheduled"))
    beat = respx.post(f"{BASE}/workers/tasks/t1/heartbeat").respond(
        200,
        json={
            "task_id": "t1",
            "lease_id": "l1",
            "lease_expires_at": "2026-11-21T10:31:00.000Z",
            "cancel_requested": False,
        },
    )
    release = respx.post(f"{BASE}/workers/tasks/t1/release").respond(
        200, json=outcome("t1", "pending")
    )
    client = Orch8Client(BASE)
    assert client.complete_task("t1", output={"url": "x"}).status == "completed"
    assert body(complete.calls.last) == {"output": {"url": "x"}}
    client.complete_task("t1", output=None, lease_id="l1")
    assert body(complete.calls.last) == {"output": None, "lease_id": "l1"}
    client.complete_task("t1")
    assert body(complete.calls.last) == {}
    assert client.fail_task("t1", error="Out of memory", retryable=True).status == "scheduled"
    assert body(fail.calls.last) == {"error": "Out of memory", "retryable": True}
    client.fail_task(
        "t1", error="e", code="c", retry_after_ms=5, checkpoint={"i": 1}, lease_id="l1"
    )
    assert body(fail.calls.last) == {
        "error": "e",
        "retryable": False,
        "code": "c",
        "retry_after_ms": 5,
        "checkpoint": {"i": 1},
        "lease_id": "l1",
    }
    lease = client.heartbeat("t1", lease_id="l1", progress={"pct": 40}, checkpoint={"c": 4})
    assert lease.cancel_requested is False
    assert body(beat.calls.last) == {
        "lease_id": "l1",
        "progress": {"pct": 40},
        "checkpoint": {"c": 4},
    }
    client.release_task("t1", lease_id="l1", delay_ms=10)
    assert body(release.calls.last) == {"lease_id": "l1", "delay_ms": 10}


@respx.mock
def test_enqueue_and_list_shapes() -> None:
    enq = respx.post(f"{BASE}/tasks").respond(201, json=task("t9"))
    lst = respx.get(f"{BASE}/tasks").respond(200, json={"tasks": [task("t9")], "next_cursor": None})
    client = Orch8Client(BASE)
    got = client.enqueue("process_image", params={"w": 800}, priority=-1, idempotency_key="k")
    assert got.id == "t9" and got.status == "pending"
    assert body(enq.calls.last) == {
        "handler_name": "process_image",
        "params": {"w": 800},
        "priority": -1,
        "idempotency_key": "k",
    }
    page = client.list_tasks(status=["failed", "cancelled"], limit=5)
    assert [t.id for t in page.tasks] == ["t9"]
    params = lst.calls.last.request.url.params
    assert params.get_list("status") == ["failed", "cancelled"] and params["limit"] == "5"


@respx.mock
def test_worker_calls_shapes() -> None:
    hb = respx.post(f"{BASE}/workers/w1/heartbeat").respond(
        200, json={"directive": "quiet", "heartbeat_interval_ms": 300, "tasks": []}
    )
    client = Orch8Client(BASE)
    got = client.heartbeat_worker("w1", active_task_ids=["a", "b"], state="running")
    assert got.directive == "quiet" and got.heartbeat_interval_ms == 300
    assert body(hb.calls.last) == {"active_task_ids": ["a", "b"], "state": "running"}


def test_base_url_and_api_key_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH8_URL", "http://env.test:4000/")
    monkeypatch.setenv("ORCH8_API_KEY", "from-env")
    with respx.mock:
        route = respx.get("http://env.test:4000/info").respond(
            200,
            json={
                "name": "orch8-server",
                "version": "0.1.0",
                "spec_version": "1.0.0",
                "spec_sha256": "x",
                "storage": "sqlite",
                "defaults": {
                    "lease_ms": 1,
                    "wait_ms": 1,
                    "max_wait_ms": 1,
                    "reaper_interval_ms": 1,
                    "heartbeat_interval_ms": 1,
                    "dead_after_ms": 1,
                    "worker_heartbeat_interval_ms": 1,
                    "worker_dead_after_ms": 1,
                    "max_attempts": 1,
                    "max_batch_size": 1,
                },
            },
        )
        assert Orch8Client().server_info().storage == "sqlite"
    assert route.calls.last.request.headers["authorization"] == "Bearer from-env"


def test_default_url_without_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORCH8_URL", raising=False)
    monkeypatch.delenv("ORCH8_API_KEY", raising=False)
    client = Orch8Client()
    assert client.config.base_url == "http://localhost:3001"
    assert "authorization" not in {k.lower() for k in client.config.request_headers()}


def test_async_client_same_shapes() -> None:
    import asyncio

    async def scenario() -> None:
        async with orch8.AsyncOrch8Client(BASE, api_key="k") as client:
            assert await client.poll_task(wait_ms=0) is None
            got = await client.poll_task(handler_names=["h"])
            assert got is not None and got.id == "task_1"
            done = await client.complete_task("task_1", output=[1, 2])
            assert done.status == "completed"

    with respx.mock:
        poll = respx.post(f"{BASE}/workers/tasks/poll")
        poll.side_effect = [httpx.Response(204), httpx.Response(200, json=claimed_task())]
        comp = respx.post(f"{BASE}/workers/tasks/task_1/complete").respond(200, json=outcome())
        asyncio.run(scenario())
    assert poll.call_count == 2
    assert body(comp.calls.last) == {"output": [1, 2]}
    assert comp.calls.last.request.headers["authorization"] == "Bearer k"


@respx.mock
def test_manual_resolution_shapes_and_no_retry(fast_retry) -> None:
    comp = respx.post(f"{BASE}/tasks/t1/complete").respond(200, json=task("t1", "completed"))
    fail = respx.post(f"{BASE}/tasks/t1/fail").respond(503, json={"code": "unavailable"})
    client = Orch8Client(BASE, retry=fast_retry)
    assert client.complete_task_manually("t1", output={"ok": True}, reason="by hand").id == "t1"
    assert body(comp.calls.last) == {"output": {"ok": True}, "reason": "by hand"}
    with pytest.raises(orch8.UnavailableError):
        client.fail_task_manually("t1", error="account closed", code="manual")
    assert body(fail.calls.last) == {"error": "account closed", "code": "manual"}
    assert fail.call_count == 1  # P-SDK-2: not in the list of calls safe to repeat


def test_misspelled_enqueue_keyword_raises() -> None:
    """Issue 14: explicit keywords; a typo must not silently enqueue on `default`."""
    client = Orch8Client(BASE)
    with respx.mock:
        route = respx.post(f"{BASE}/tasks").respond(201, json=task("t1"))
        with pytest.raises(TypeError, match="queu_name"):
            client.enqueue("h", queu_name="typo")  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="idempotency_kye"):
            client.enqueue_batch([{"handler_name": "h", "idempotency_kye": "k"}])
        with pytest.raises(TypeError, match="handler_name"):
            client.enqueue_batch([{"params": {}}])
    assert route.call_count == 0


def test_enqueue_batch_items_keep_their_shape() -> None:
    with respx.mock:
        route = respx.post(f"{BASE}/tasks/batch").respond(201, json={"tasks": [task("t1")]})
        got = Orch8Client(BASE).enqueue_batch([{"handler_name": "h", "params": {"n": 1}}])
    assert [t.id for t in got] == ["t1"]
    assert body(route.calls.last) == {"tasks": [{"handler_name": "h", "params": {"n": 1}}]}


def test_one_method_per_operation_in_both_clients() -> None:
    """P-SDK-2: every x-orch8-method is a method of Orch8Client and AsyncOrch8Client."""
    import inspect
    import os
    import re
    from pathlib import Path

    # scripts/runtimes.py runs a copy of these tests outside the repo and names the spec.
    default = Path(__file__).resolve().parents[3] / "openapi.yaml"
    spec = Path(os.environ.get("ORCH8_SPEC") or default).read_text()
    names = re.findall(r"x-orch8-method:\s*(\w+)", spec)
    assert len(names) >= 30
    for name in names:
        snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
        assert callable(getattr(Orch8Client, snake)), snake
        assert inspect.iscoroutinefunction(getattr(AsyncOrch8Client, snake)), snake
    assert Orch8Client.heartbeat is Orch8Client.heartbeat_task  # the 0.1 name, kept


def test_timestamps_with_z_parse_on_every_python() -> None:
    """Issue 14: 3.10's datetime.fromisoformat rejects 'Z'; the generated models do not."""
    from orch8.models import Lease

    lease = Lease.from_dict(
        {"id": "l", "worker_id": "w", "attempt": 1, "expires_at": "2026-11-21T10:31:00.123Z"}
    )
    assert lease.expires_at.utcoffset() is not None
    assert (lease.expires_at.year, lease.expires_at.microsecond) == (2026, 123000)
