"""Worker pieces without a server: failure classification, backoff, and a mocked loop."""

from __future__ import annotations

import threading

import httpx
import pytest
import respx

from orch8 import (
    AsyncOrch8Client,
    Backoff,
    PermanentError,
    RetryableError,
    RetryPolicy,
    TaskContext,
    Worker,
)
from orch8.worker._execute import classify

from .conftest import BASE, claimed_task, outcome, problem


def test_classify_follows_p_sdk_6() -> None:
    retry = classify(RetryableError("later", retry_after=1.5, checkpoint={"i": 2}))
    assert (retry.retryable, retry.code, retry.retry_after_ms) == (True, "retryable_error", 1500)
    assert retry.checkpoint == {"i": 2}
    perm = classify(PermanentError("never", code="bad_input"))
    assert (perm.retryable, perm.code) == (False, "bad_input")
    assert classify(PermanentError("never")).code == "permanent_error"
    other = classify(ZeroDivisionError("oops"))
    assert (other.retryable, other.code) == (True, "unhandled_error")
    assert other.details["exception"] == "ZeroDivisionError"


def test_outage_backoff_doubles_from_500ms_to_30s_with_full_jitter() -> None:
    backoff = Backoff()
    ceilings = [0.5, 1, 2, 4, 8, 16, 30, 30]
    for ceiling in ceilings:
        assert 0 <= backoff.next_delay() <= ceiling
    big = Backoff()
    for _ in range(20):
        big.next_delay()
    assert max(big.next_delay() for _ in range(200)) > 15  # capped at 30, jittered below
    big.reset()
    assert big.next_delay() <= 0.5


def test_worker_defaults_match_section_14() -> None:
    worker = Worker(handle_signals=False)
    assert (worker.concurrency, worker.wait_ms, worker.grace_period) == (10, 30000, 25.0)
    assert worker.heartbeat_interval is None and worker.outage_backoff == (0.5, 30.0)
    with pytest.raises(ValueError):
        Worker(concurrency=0)


def test_register_and_decorator() -> None:
    worker = Worker(handle_signals=False)

    @worker.handler("b")
    def b(ctx: TaskContext) -> None: ...

    worker.register("a", lambda ctx: None)
    assert list(worker.handler_names) == ["a", "b"]
    with pytest.raises(TypeError):
        worker.register("c", "not callable")  # type: ignore[arg-type]


def _worker_record(worker_id: str) -> dict:
    return {
        "worker_id": worker_id,
        "state": "running",
        "directive": "running",
        "hostname": "h",
        "pid": 1,
        "handlers": ["process_image"],
        "queues": ["default"],
        "concurrency": 2,
        "labels": {},
        "sdk": "orch8-python/0.1.0",
        "active_tasks": 0,
        "registered_at": "2026-11-21T10:29:00.000Z",
        "last_heartbeat_at": "2026-11-21T10:29:00.000Z",
        "heartbeat_interval_ms": 50,
        "dead_after_ms": 30000,
    }


@respx.mock
def test_result_is_resent_through_an_outage_and_polls_ask_for_free_slots() -> None:
    """P-SDK-9 and P-SDK-3 against a mocked server: 503s on complete, then success."""
    far_lease = claimed_task("t1")
    far_lease["lease"]["expires_at"] = "2999-01-01T00:00:00.000Z"
    respx.post(f"{BASE}/workers").respond(200, json=_worker_record("w"))
    respx.post(f"{BASE}/workers/w/heartbeat").respond(
        200, json={"directive": "running", "heartbeat_interval_ms": 50, "tasks": []}
    )
    respx.delete(f"{BASE}/workers/w").respond(200, json=_worker_record("w"))
    sizes: list[int] = []

    def poll(request: httpx.Request) -> httpx.Response:
        import json

        sizes.append(json.loads(request.content)["batch_size"])
        tasks = [far_lease] if len(sizes) == 1 else []
        return httpx.Response(200, json={"tasks": tasks, "next_poll_after_ms": 20})

    respx.post(f"{BASE}/workers/tasks/poll/batch").mock(side_effect=poll)
    unavailable = httpx.Response(503, json=problem(503, "unavailable"))
    complete = respx.post(f"{BASE}/workers/tasks/t1/complete")
    # 2 client calls of 4 tries each fail, then the third call succeeds.
    complete.side_effect = [unavailable] * 8 + [httpx.Response(200, json=outcome("t1"))]
    done = threading.Event()
    client = AsyncOrch8Client(BASE, retry=RetryPolicy(base_delay=0.001, max_delay=0.002))
    worker = Worker(
        client,
        worker_id="w",
        concurrency=2,
        handle_signals=False,
        outage_backoff=(0.01, 0.05),
    )
    worker.register("process_image", lambda ctx: ctx.params["image_url"])
    worker.on_task_completed(lambda ctx, output: done.set())
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        assert done.wait(10)
    finally:
        worker.stop()
        thread.join(10)
    assert complete.call_count == 9
    assert sizes[0] == 2 and all(1 <= s <= 2 for s in sizes)
    stats = worker.stats()
    assert (stats.tasks_claimed, stats.tasks_completed, stats.in_flight) == (1, 1, 0)
