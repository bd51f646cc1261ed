"""Backpressure (docs/protocol.md 12a): the enqueue rate (P-BP-1), the queue depth limit
(P-BP-2) and the per-replica caps on waiting polls and requests in progress (P-BP-3),
against real servers on both backends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from conftest import assert_problem, enqueue, eventually

from orch8_server.cli import parse_settings
from orch8_server.testing import RunningServer

Start = Callable[..., RunningServer]


def _metric(api: httpx.Client, line: str) -> float:
    text = api.get("/metrics").text
    return next((float(x[len(line) :]) for x in text.splitlines() if x.startswith(line)), 0.0)


def _rejections(api: httpx.Client, reason: str) -> float:
    return _metric(api, f'orch8_backpressure_rejections_total{{reason="{reason}"}} ')


def _stored(api: httpx.Client, handler: str) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = []
    params: dict[str, Any] = {"handler_name": handler, "limit": 200}
    while True:
        page = api.get("/tasks", params=params).json()
        tasks += page["tasks"]
        if not page["next_cursor"]:
            return tasks
        params["cursor"] = page["next_cursor"]


def _retry_after(response: httpx.Response) -> int:
    value = int(response.headers["retry-after"])
    assert value >= 1, response.headers
    return value


# P-BP-1 -------------------------------------------------------------------------------


def test_p_bp_1_over_the_rate_is_429_and_stores_nothing(start_server: Start, name: str) -> None:
    server = start_server(**{"enqueue-rate": 0.5, "enqueue-burst": 2})
    with httpx.Client(base_url=server.url, timeout=20) as api:
        enqueue(api, name)
        enqueue(api, name)
        refused = api.post("/tasks", json={"handler_name": name, "idempotency_key": name})
        body = assert_problem(refused, 429, "rate_limited")
        # Two tokens short of none at 0.5/s: a whole token comes in 2 s.
        assert _retry_after(refused) == 2
        assert "0.5 tasks/s" in body["detail"] and "default" in body["detail"]
        batch = {"tasks": [{"handler_name": name}]}
        assert_problem(api.post("/tasks/batch", json=batch), 429, "rate_limited")
        assert len(_stored(api, name)) == 2  # the refused ones stored nothing
        assert _rejections(api, "enqueue_rate") == 2


def test_p_bp_1_batch_larger_than_the_burst_is_422(start_server: Start, name: str) -> None:
    server = start_server(**{"enqueue-rate": 100, "enqueue-burst": 3})
    with httpx.Client(base_url=server.url, timeout=20) as api:
        too_big = {"tasks": [{"handler_name": name}] * 4}
        body = assert_problem(api.post("/tasks/batch", json=too_big), 422, "validation_error")
        assert "burst of 3" in body["detail"]
        fits = {"tasks": [{"handler_name": name}] * 3}
        assert api.post("/tasks/batch", json=fits).status_code == 201
        assert len(_stored(api, name)) == 3


def test_p_bp_1_load_at_twice_the_rate_loses_nothing(start_server: Start, name: str) -> None:
    """The issue-17 load test: a producer offering 100 tasks/s against --enqueue-rate 50
    gets 429s, waits Retry-After, retries; every accepted task is stored once and
    completes."""
    server = start_server(**{"enqueue-rate": 50, "enqueue-burst": 50})
    total, offered_per_s = 250, 100
    accepted, refused = 0, 0
    with httpx.Client(base_url=server.url, timeout=20) as api:
        started = time.monotonic()
        for i in range(total):
            due = started + i / offered_per_s
            if due > time.monotonic():
                time.sleep(due - time.monotonic())  # pacing the producer, not waiting on state
            body = {"handler_name": name, "idempotency_key": f"{name}-{i}", "params": {"i": i}}
            for _ in range(20):  # bounded: 20 refusals of one task would be a bug
                response = api.post("/tasks", json=body)
                if response.status_code != 429:
                    break
                refused += 1
                assert_problem(response, 429, "rate_limited")
                time.sleep(_retry_after(response))  # P-BP-4: honour Retry-After
                started += _retry_after(response)  # the producer was held back meanwhile
            assert response.status_code == 201, response.text  # never a replay: 429 stored nothing
            accepted += 1
        assert refused > 0 and accepted == total
        stored = _stored(api, name)
        assert len(stored) == accepted
        assert sorted(t["params"]["i"] for t in stored) == list(range(total))

        done = 0
        deadline = time.monotonic() + 30
        while done < accepted and time.monotonic() < deadline:
            polled = api.post(
                "/workers/tasks/poll/batch",
                json={"handler_names": [name], "batch_size": 100, "wait_ms": 1000},
            ).json()["tasks"]
            items = [
                {"task_id": t["id"], "lease_id": t["lease"]["id"], "output": 1} for t in polled
            ]
            if items:
                api.post("/workers/tasks/complete/batch", json={"items": items}).raise_for_status()
            done += len(items)
        assert done == accepted
        statuses = {t["status"] for t in _stored(api, name)}
        assert statuses == {"completed"}


# P-BP-2 -------------------------------------------------------------------------------


def test_p_bp_2_full_queue_is_429_until_it_drains(start_server: Start, name: str) -> None:
    server = start_server(**{"max-queue-depth": 3})
    queue = "q_" + name
    with httpx.Client(base_url=server.url, timeout=20) as api:
        enqueue(api, name, queue_name=queue)
        enqueue(api, name, queue_name=queue)
        enqueue(api, name, queue_name=queue, delay_ms=600_000)  # scheduled counts too
        refused = api.post("/tasks", json={"handler_name": name, "queue_name": queue})
        body = assert_problem(refused, 429, "rate_limited")
        assert refused.headers["retry-after"] == "1"
        assert queue in body["detail"] and "--max-queue-depth 3" in body["detail"]
        enqueue(api, name)  # another queue is not limited
        # The depth is re-read (at most once a second): still full while nothing moved.
        held = time.monotonic() + 1.5
        while time.monotonic() < held:
            again = api.post("/tasks", json={"handler_name": name, "queue_name": queue})
            assert again.status_code == 429, again.text
            time.sleep(0.1)
        assert len([t for t in _stored(api, name) if t["queue_name"] == queue]) == 3
        claimed = api.post(
            "/workers/tasks/poll", json={"queue_name": queue, "handler_names": [name], "wait_ms": 0}
        )
        assert claimed.status_code == 200  # running: no longer pending, so depth 2
        eventually(
            lambda: (
                api.post("/tasks", json={"handler_name": name, "queue_name": queue}).status_code
                == 201
            ),
            timeout=5,
            interval=0.2,
        )
        assert _rejections(api, "queue_depth") >= 2


# P-BP-1, P-BP-2: starting an instance -------------------------------------------------


def _define(api: httpx.Client, name: str, steps: list[dict[str, Any]]) -> None:
    r = api.post("/sequences", json={"name": name, "steps": steps})
    assert r.status_code == 201, r.text


def _instances(api: httpx.Client, sequence: str) -> list[dict[str, Any]]:
    instances: list[dict[str, Any]] = api.get("/instances", params={"sequence": sequence}).json()[
        "instances"
    ]
    return instances


def test_p_bp_2_starting_an_instance_onto_a_full_queue_is_429_and_stores_nothing(
    start_server: Start, name: str
) -> None:
    """The queue depth limit covers the tasks a start dispatches at once; the engine's
    later steps pass it, so an accepted instance never stalls."""
    server = start_server(**{"max-queue-depth": 2})
    queue = "q_" + name
    with httpx.Client(base_url=server.url, timeout=20) as api:
        _define(api, name, [{"id": "first", "handler": name, "queue_name": queue}])
        later = name + "-later"
        _define(api, later, [{"id": "a", "handler": name + "_a"},
                             {"id": "b", "handler": name, "queue_name": queue}])  # fmt: skip
        accepted = api.post("/instances", json={"sequence": later})  # its first step: default
        assert accepted.status_code == 201, accepted.text
        enqueue(api, name, queue_name=queue)
        enqueue(api, name, queue_name=queue)
        for i in range(10):  # the report: 50 starts onto a full queue were all 201
            refused = api.post("/instances", json={"sequence": name, "idempotency_key": f"{i}"})
            body = assert_problem(refused, 429, "rate_limited")
            assert refused.headers["retry-after"] == "1"
            assert queue in body["detail"] and "--max-queue-depth 2" in body["detail"]
        assert _instances(api, name) == []  # nothing stored, not even the keys
        assert len(_stored(api, name)) == 2
        assert _rejections(api, "queue_depth") == 10
        # The accepted instance's second step goes onto the full queue all the same.
        first = api.post("/workers/tasks/poll", json={"handler_names": [name + "_a"]}).json()
        done = api.post(f"/workers/tasks/{first['id']}/complete",
                        json={"lease_id": first["lease"]["id"], "output": 1})  # fmt: skip
        assert done.status_code == 200, done.text
        inst = api.get(f"/instances/{accepted.json()['id']}").json()
        assert inst["steps"][1]["status"] == "running" and inst["steps"][1]["task_id"], inst
        assert len([t for t in _stored(api, name) if t["queue_name"] == queue]) == 3


def test_p_bp_1_starting_an_instance_takes_a_token_per_task_it_dispatches(
    start_server: Start, name: str
) -> None:
    server = start_server(**{"enqueue-rate": 0.5, "enqueue-burst": 3})
    with httpx.Client(base_url=server.url, timeout=20) as api:
        fan = [{"id": "l", "handler": name}, {"id": "r", "handler": name}]
        _define(api, name, [{"id": "g", "parallel": fan}])
        assert api.post("/instances", json={"sequence": name}).status_code == 201  # 2 of 3
        refused = api.post("/instances", json={"sequence": name})
        body = assert_problem(refused, 429, "rate_limited")
        assert _retry_after(refused) == 2  # one token short at 0.5/s
        assert "0.5 tasks/s" in body["detail"]
        assert len(_instances(api, name)) == 1 and len(_stored(api, name)) == 2
        assert _rejections(api, "enqueue_rate") == 1
        # A start that dispatches nothing at once (a sleep first) needs no token.
        nap = name + "-nap"
        _define(api, nap, [{"id": "nap", "handler": "sleep", "params": {"duration_ms": 600_000}},
                           {"id": "after", "handler": name}])  # fmt: skip
        for _ in range(3):
            assert api.post("/instances", json={"sequence": nap}).status_code == 201
        # A first step wider than the burst can never start: 422, not a 429 to retry.
        wide = name + "-wide"
        _define(api, wide, [{"id": "g", "parallel": [
            {"id": f"c{i}", "handler": name} for i in range(4)]}])  # fmt: skip
        problem = assert_problem(
            api.post("/instances", json={"sequence": wide}), 422, "validation_error"
        )
        assert problem["errors"][0]["pointer"] == "/sequence", problem
        assert "burst of 3" in problem["detail"]
        assert _instances(api, wide) == []


# P-BP-3 -------------------------------------------------------------------------------


def _long_poll(url: str, handler: str, wait_ms: int, out: list[httpx.Response]) -> threading.Thread:
    def run() -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            out.append(
                client.post(
                    "/workers/tasks/poll", json={"handler_names": [handler], "wait_ms": wait_ms}
                )
            )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_p_bp_3_poll_over_the_waiting_cap_is_503(start_server: Start, name: str) -> None:
    server = start_server(**{"max-waiting-polls": 2})
    with httpx.Client(base_url=server.url, timeout=20) as api:
        results: list[httpx.Response] = []
        threads = [_long_poll(server.url, name, 8000, results) for _ in range(2)]
        eventually(lambda: _metric(api, "orch8_polls_waiting ") == 2)
        # Counted once parked after an empty claim; a short wait keeps a retry cheap if the
        # two had not finished their first claim yet.
        third = eventually(
            lambda: (
                r
                if (
                    r := api.post(
                        "/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 300}
                    )
                ).status_code
                == 503
                else None
            )
        )
        body = assert_problem(third, 503, "unavailable")
        assert third.headers["retry-after"] == "1"
        assert "2 waiting polls" in body["detail"] and "--max-waiting-polls" in body["detail"]
        # A poll that does not wait is served over the cap, and so is one with work at once.
        empty = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 0})
        assert empty.status_code == 204
        other = name + "_ready"
        ready = enqueue(api, other)
        served = api.post("/workers/tasks/poll", json={"handler_names": [other], "wait_ms": 8000})
        assert served.status_code == 200 and served.json()["id"] == ready["id"]
        assert _rejections(api, "waiting_polls") >= 1
        # The refused poll claimed nothing: both tasks go to the two that wait.
        enqueue(api, name)
        enqueue(api, name)
        for thread in threads:
            thread.join(timeout=10)
        assert sorted(r.status_code for r in results) == [200, 200]


def test_p_bp_3_requests_over_the_inflight_cap_are_503(start_server: Start, name: str) -> None:
    server = start_server(**{"max-inflight-requests": 1})
    with httpx.Client(base_url=server.url, timeout=20) as api:
        assert api.get("/tasks", params={"limit": 1}).status_code == 200  # alone: served
        results: list[httpx.Response] = []
        # The poll holds the one slot while the seven calls below are refused; it then ends
        # at its wait_ms, which is the test's own wait: 3 s leaves those calls ample time.
        thread = _long_poll(server.url, name, 3000, results)
        eventually(lambda: _metric(api, "orch8_polls_waiting ") == 1)  # /metrics never counts
        refused = api.get("/tasks", params={"limit": 1})
        body = assert_problem(refused, 503, "unavailable")
        assert refused.headers["retry-after"] == "1"
        assert "1 requests" in body["detail"] and "--max-inflight-requests" in body["detail"]
        assert api.get("/health/live").status_code == 200
        assert api.get("/health/ready").status_code == 200
        assert _rejections(api, "inflight_requests") == 1
        # The enqueue that would release the poll is refused too; the poll times out.
        assert_problem(api.post("/tasks", json={"handler_name": name}), 503, "unavailable")
        thread.join(timeout=15)
        assert [r.status_code for r in results] == [204]
        assert api.get("/tasks", params={"limit": 1}).status_code == 200  # freed


# Settings -----------------------------------------------------------------------------


def test_p_bp_defaults_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    s = parse_settings([])
    assert (
        s.enqueue_rate,
        s.enqueue_burst,
        s.max_queue_depth,
        s.max_waiting_polls,
        s.max_inflight_requests,
    ) == (0, 0, 0, 10_000, 0)  # docs/protocol.md section 13: all off but 10000 polls
    for env, value in [
        ("ORCH8_ENQUEUE_RATE", "2.5"),
        ("ORCH8_ENQUEUE_BURST", "7"),
        ("ORCH8_MAX_QUEUE_DEPTH", "100"),
        ("ORCH8_MAX_WAITING_POLLS", "3"),
        ("ORCH8_MAX_INFLIGHT_REQUESTS", "4"),
    ]:
        monkeypatch.setenv(env, value)
    s = parse_settings([])
    assert (s.enqueue_rate, s.enqueue_burst, s.max_queue_depth) == (2.5, 7, 100)
    assert (s.max_waiting_polls, s.max_inflight_requests) == (3, 4)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--enqueue-rate", "-1"], "--enqueue-rate must be between 0"),
        (["--enqueue-rate", "nan"], "--enqueue-rate must be between 0"),
        (["--enqueue-burst", "-1"], "--enqueue-burst must be between 0"),
        (["--max-queue-depth", "-5"], "--max-queue-depth must be between 0"),
        (["--max-waiting-polls", "0"], "--max-waiting-polls must be between 1"),
        (["--max-inflight-requests", "-1"], "--max-inflight-requests must be between 0"),
    ],
)
def test_p_bp_out_of_range_settings_are_refused(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_settings(args)
    assert exited.value.code != 0 and message in capsys.readouterr().err
