"""P-SDK-26: while results are being reported, a poll waits for their slots."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

from orch8 import Worker
from orch8.worker._runtime import poll_threshold

from .fake_server import FakeServer, Running, outcome_item, wait_until


def _poll_sizes(server: FakeServer) -> list[int]:
    return [b["batch_size"] for b in server.sent("POST", "/workers/tasks/poll/batch")]


def test_no_poll_for_the_one_slot_a_result_freed_while_three_are_reported() -> None:
    """Concurrency 4 (threshold 2): after the first result's answer one slot is free and
    three results are on their way; the next poll waits for them and asks for 4."""
    server = FakeServer()
    for i in range(4):
        server.add(f"t{i}")
    gates = {1: [False], 2: [False]}
    calls = [0]

    @server.route("POST", "/workers/tasks/complete/batch")
    async def complete(request: httpx.Request, body: Any) -> httpx.Response:
        calls[0] += 1
        gate = gates.get(calls[0])
        while gate is not None and not gate[0]:
            await asyncio.sleep(0.002)
        return httpx.Response(
            200, json={"items": [outcome_item(i["task_id"]) for i in body["items"]]}
        )

    finished = [0]

    def handler(ctx: Any) -> str:
        if ctx.id != "t0":  # ready once t0's request is in flight, so t0's goes alone (P-SDK-12)
            wait_until(lambda: calls[0] == 1)
        finished[0] += 1
        return "ok"

    worker = server.worker(concurrency=4)
    worker.register("process_image", handler)
    run = Running(worker)
    try:
        wait_until(lambda: calls[0] == 1 and finished[0] == 4)
        polled = len(_poll_sizes(server))
        gates[1][0] = True  # one slot frees; three results are still being reported
        wait_until(lambda: worker.stats().tasks_completed == 1)
        # Without the threshold the worker polls for the one slot at once; give it the
        # time to (bounded), then let the other three results through.
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline and len(_poll_sizes(server)) == polled:
            time.sleep(0.005)
        gates[2][0] = True
        wait_until(lambda: worker.stats().tasks_completed == 4)
        wait_until(lambda: len(_poll_sizes(server)) > polled)
    finally:
        run.stop()
    sizes = _poll_sizes(server)
    assert sizes[0] == 4
    assert min(sizes[polled:]) >= 2, sizes


def test_one_free_slot_is_polled_for_at_once_while_other_handlers_run() -> None:
    """P-SDK-26, P-SDK-3: no result is being reported (three handlers still run), so the
    slot the quick task freed is polled for at once, below the threshold."""
    server = FakeServer()
    for i in range(3):
        server.add(f"long{i}", handler_name="long")
    server.add("quick", handler_name="quick")
    release = threading.Event()
    worker = server.worker(concurrency=4)
    worker.register("long", lambda ctx: release.wait(10) and "ok")
    worker.register("quick", lambda ctx: "ok")
    run = Running(worker)
    try:
        wait_until(lambda: 1 in _poll_sizes(server))
        assert worker.stats().in_flight == 3
    finally:
        release.set()
        run.stop()


@pytest.mark.parametrize(
    ("concurrency", "given", "want"),
    [(1, None, 1), (4, None, 2), (10, None, 5), (101, None, 50), (150, None, 50),
     (10, 1, 1), (10, 30, 10), (300, 200, 100)],
)  # fmt: skip
def test_default_threshold_is_half_of_min_concurrency_100(concurrency, given, want) -> None:
    assert poll_threshold(concurrency, given) == want


def test_a_threshold_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="poll_threshold"):
        Worker(poll_threshold=0, handle_signals=False)
