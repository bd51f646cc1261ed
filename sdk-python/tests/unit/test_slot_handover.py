"""P-SDK-3: a completion handed to the completer frees its slot; at most `concurrency` do."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx

from .fake_server import FakeServer, Running, outcome_item, wait_until


def _held_completions(server: FakeServer, concurrency: int) -> tuple[threading.Event, list[int]]:
    """Complete batches wait for the returned event; the list counts requests received."""
    gate = threading.Event()
    received = [0]

    @server.route("POST", "/workers/tasks/complete/batch")
    async def complete(request: httpx.Request, body: Any) -> httpx.Response:
        received[0] += 1
        while not gate.is_set():
            await asyncio.sleep(0.002)
        with server.lock:
            server.completed += [i["task_id"] for i in body["items"]]
        items = [outcome_item(i["task_id"]) for i in body["items"]]
        return httpx.Response(200, json={"items": items})

    return gate, received


def _claimed(server: FakeServer) -> int:
    return 10 - len(server.pending)


def test_polls_while_a_batch_is_unanswered_and_caps_the_completions_awaiting_one() -> None:
    """Concurrency 2: the two completions handed over free their slots, so the worker claims
    two more while the first batch is held; those four results awaiting an answer are the
    cap (2 freed + 2 keeping their slots), so nothing more is claimed until answers come."""
    server = FakeServer()
    for i in range(10):
        server.add(f"t{i}")
    gate, received = _held_completions(server, 2)
    worker = server.worker(concurrency=2)
    worker.register("process_image", lambda ctx: "ok")
    run = Running(worker)
    try:
        wait_until(lambda: _claimed(server) == 4 and worker.stats().in_flight == 4)
        assert received[0] >= 1 and not server.completed  # claimed while a batch was held
        # The cap: give a worker without one the time to claim a fifth (bounded), then answer.
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline and _claimed(server) == 4:
            time.sleep(0.005)
        assert _claimed(server) == 4, "claimed beyond concurrency + completions awaiting answers"
        gate.set()
        wait_until(lambda: worker.stats().tasks_completed == 10)
    finally:
        gate.set()
        run.stop()
    assert sorted(server.completed) == sorted(f"t{i}" for i in range(10))
    assert all(b["batch_size"] <= 2 for b in server.sent("POST", "/workers/tasks/poll/batch"))


def test_stop_still_delivers_completions_whose_slots_were_freed() -> None:
    """P-SDK-7: a result handed over (its slot already free) is still delivered by a stop."""
    server = FakeServer()
    for i in range(10):
        server.add(f"t{i}")
    gate, _ = _held_completions(server, 2)
    worker = server.worker(concurrency=2)
    worker.register("process_image", lambda ctx: "ok")
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().in_flight == 4)
        worker.stop()
        gate.set()
        run.join()
    finally:
        gate.set()
    assert len(server.completed) == 4
    assert worker.stats().tasks_completed == 4
    assert worker.stats().in_flight == 0
