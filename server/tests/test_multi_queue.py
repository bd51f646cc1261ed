"""Several queues per poll: strict order, weights, and the refused combinations
(P-QUEUE-2, P-QUEUE-3, P-QUEUE-4), on both backends."""

from __future__ import annotations

import threading
import time

import httpx
from conftest import assert_problem, enqueue, eventually
from test_long_poll import _waiting


def _poll(api: httpx.Client, handler: str, **fields: object) -> httpx.Response:
    return api.post(
        "/workers/tasks/poll", json={"handler_names": [handler], "wait_ms": 0, **fields}
    )


def _batch(api: httpx.Client, handler: str, size: int, **fields: object) -> list[dict]:
    r = api.post(
        "/workers/tasks/poll/batch",
        json={"handler_names": [handler], "wait_ms": 0, "batch_size": size, **fields},
    )
    assert r.status_code == 200, r.text
    return r.json()["tasks"]


def _fill(api: httpx.Client, handler: str, queue: str, n: int) -> None:
    tasks = [{"handler_name": handler, "queue_name": queue} for _ in range(n)]
    for i in range(0, n, 100):
        r = api.post("/tasks/batch", json={"tasks": tasks[i : i + 100]})
        assert r.status_code == 201, r.text


def test_strict_order_claims_a_later_queue_only_when_earlier_ones_are_empty(
    api: httpx.Client, name: str
) -> None:
    """P-QUEUE-2: queue_names is a strict order; a batch fills from the first, then the next."""
    first, second = f"{name}-a", f"{name}-b"
    later = enqueue(api, name, queue_name=second)
    early = enqueue(api, name, queue_name=first)
    r = _poll(api, name, queue_names=[first, second])
    assert r.status_code == 200 and r.json()["id"] == early["id"]
    r = _poll(api, name, queue_names=[first, second])
    assert r.status_code == 200 and r.json()["id"] == later["id"]
    assert _poll(api, name, queue_names=[first, second]).status_code == 204
    _fill(api, name, first, 3)
    _fill(api, name, second, 3)
    got = _batch(api, name, 5, queue_names=[first, second])
    assert [t["queue_name"] for t in got] == [first] * 3 + [second] * 2


def test_weighted_polls_share_claims_by_weight(api: httpx.Client, name: str) -> None:
    """P-QUEUE-3: with work in both queues, 3:1 weights give the first queue ~3/4 of 400
    claims (0.75 +- 0.1 is > 6 standard deviations: it cannot flake)."""
    heavy, light = f"{name}-heavy", f"{name}-light"
    _fill(api, name, heavy, 450)
    _fill(api, name, light, 450)
    options = {"queue_names": [heavy, light], "queue_weights": {heavy: 3, light: 1}}
    claimed = [t["queue_name"] for _ in range(20) for t in _batch(api, name, 10, **options)]
    claimed += [_poll(api, name, **options).json()["queue_name"] for _ in range(200)]
    assert len(claimed) == 400
    share = claimed.count(heavy) / len(claimed)
    assert 0.65 <= share <= 0.85, share


def test_weighted_poll_fills_from_the_other_queues(api: httpx.Client, name: str) -> None:
    """P-QUEUE-3: a queue without work gives its draws to the others; a weighted poll
    never answers empty while any of its queues has work."""
    heavy, light = f"{name}-heavy", f"{name}-light"
    _fill(api, name, light, 5)
    options = {"queue_names": [heavy, light], "queue_weights": {heavy: 1000, light: 1}}
    got = _batch(api, name, 10, **options)
    assert [t["queue_name"] for t in got] == [light] * 5
    _fill(api, name, heavy, 2)
    _fill(api, name, light, 8)
    got = _batch(api, name, 10, **options)
    assert sorted(t["queue_name"] for t in got) == sorted([heavy] * 2 + [light] * 8)


def test_a_parked_multi_queue_poll_wakes_for_any_of_its_queues(
    api: httpx.Client, server, name: str
) -> None:
    """P-QUEUE-2: a long-poll parked on several queues is woken by work on any of them."""
    first, second = f"{name}-a", f"{name}-b"
    got: list[httpx.Response] = []
    with httpx.Client(base_url=server.url, timeout=20) as waiting:
        poller = threading.Thread(
            target=lambda: got.append(
                waiting.post(
                    "/workers/tasks/poll",
                    json={"handler_names": [name], "queue_names": [first, second], "wait_ms": 8000},
                )
            )
        )
        poller.start()
        eventually(lambda: _waiting(api) >= 1)  # parked: the wake-up is what is tested
        started = time.monotonic()
        task = enqueue(api, name, queue_name=second)
        poller.join(10)
    assert got and got[0].status_code == 200 and got[0].json()["id"] == task["id"]
    assert time.monotonic() - started < 4  # woken, not at the end of its wait


def test_queue_combinations_the_schema_cannot_refuse_are_422(api: httpx.Client, name: str) -> None:
    """P-QUEUE-4: queue_names with queue_name, weights without queue_names or naming
    other queues, are validation errors at the offending member."""
    for path in ("/workers/tasks/poll", "/workers/tasks/poll/batch"):
        cases = [
            ({"queue_name": "a", "queue_names": ["a", "b"]}, "/queue_names"),
            ({"queue_weights": {"a": 1}}, "/queue_weights"),
            ({"queue_names": ["a", "b"], "queue_weights": {"a": 1}}, "/queue_weights"),
            ({"queue_names": ["a"], "queue_weights": {"a": 1, "b": 2}}, "/queue_weights"),
            ({"queue_names": ["a", "a"]}, "/queue_names"),
            ({"queue_names": []}, "/queue_names"),
            ({"queue_names": ["a"], "queue_weights": {"a": 0}}, "/queue_weights/a"),
        ]
        for body, pointer in cases:
            r = api.post(path, json={"handler_names": [name], "wait_ms": 0, **body})
            problem = assert_problem(r, 422, "validation_error")
            assert pointer in [e["pointer"] for e in problem["errors"]], (body, problem)


def test_single_queue_polls_are_unchanged(api: httpx.Client, name: str) -> None:
    """P-QUEUE-1: queue_name alone, and no queue at all (the default queue), as before."""
    named = enqueue(api, name, queue_name=f"{name}-q")
    plain = enqueue(api, name)
    assert _poll(api, name).json()["id"] == plain["id"]
    assert _poll(api, name, queue_name=f"{name}-q").json()["id"] == named["id"]
    assert _poll(api, name, queue_names=["default"]).status_code == 204
