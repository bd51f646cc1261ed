"""The grace period ends while a result is on its way (P-SDK-7, P-SDK-17).

A task whose completion is being sent is not failed with `shutdown`: the answer to the
completion decides how it ended (as in sdk-go and sdk-typescript).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx

from .fake_server import FakeServer, Running, outcome_item, wait_until


def test_a_completion_in_flight_when_the_grace_period_ends_is_not_failed_with_shutdown() -> None:
    server = FakeServer()
    server.add("t1")
    arrived = threading.Event()

    @server.route("POST", "/workers/tasks/complete/batch")
    async def complete(request: httpx.Request, body: Any) -> httpx.Response:
        arrived.set()
        # A slow answer that outlasts the 50 ms grace period: held until a (wrong) shutdown
        # failure arrives, or at most 0.5 s.
        deadline = time.monotonic() + 0.5
        while not server.failed and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        return httpx.Response(200, json={"items": [outcome_item("t1")]})

    worker = server.worker(grace_period_ms=50)
    worker.register("process_image", lambda ctx: "done")
    run = Running(worker)
    try:
        wait_until(arrived.is_set)
    finally:
        run.stop()
    stats = worker.stats()
    assert server.failed == [], "a result in flight was failed with shutdown"
    assert (stats.tasks_completed, stats.tasks_failed, stats.in_flight) == (1, 0, 0)
