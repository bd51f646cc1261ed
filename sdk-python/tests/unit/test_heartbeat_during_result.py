"""A worker heartbeat's lease_lost while the result is on its way (P-WORKER-2, P-SDK-5).

The server that already applied our completion or failure calls the lease gone in the next
worker heartbeat; the answer to the result itself decides how the task ended (as in the
TypeScript and Go SDKs).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from orch8 import PermanentError, TaskContext

from .conftest import problem
from .fake_server import FakeServer, Running, outcome_item, task_outcome, wait_until


def _lost_heartbeats(server: FakeServer, armed: bool = False) -> list[int]:
    """Once armed (answered[1] set), worker heartbeats answer lease_lost for each held task.

    Returns [lease_lost answers so far, armed]; a result route arms it when the result
    arrives, as a real server that applied the result would.
    """
    answered = [0, int(armed)]

    @server.route("POST", "/workers/w/heartbeat")
    def heartbeat(request: httpx.Request, body: Any) -> httpx.Response:
        ids = body["active_task_ids"] if answered[1] else []
        answered[0] += len(ids)
        tasks = [
            {"task_id": t, "lease_lost": True, "cancel_requested": False, "lease_expires_at": None}
            for t in ids
        ]
        return httpx.Response(
            200, json={"directive": "running", "heartbeat_interval_ms": 20, "tasks": tasks}
        )

    return answered


def _outage_until_lost(answered: list[int], ok: Any) -> Any:
    """A result route: the first two calls (the client's try and its retry) answer 503,
    the first one only after heartbeats said lease_lost twice; later calls answer `ok()`.

    The server applied the result but its answer was lost; the worker's re-send gets the
    same outcome again (P-IDEM-1).
    """
    calls = [0]

    async def route(request: httpx.Request, body: Any) -> httpx.Response:
        calls[0] += 1
        answered[1] = 1
        while answered[0] < 2:
            await asyncio.sleep(0.005)
        if calls[0] <= 2:
            return httpx.Response(503, json=problem(503, "unavailable"))
        return ok()

    route.calls = calls  # type: ignore[attr-defined]
    return route


def test_heartbeat_lease_lost_during_a_completion_in_flight_counts_it_completed() -> None:
    """The completion answered after heartbeats said lease_lost still counts as completed."""
    server = FakeServer()
    server.add("t9")
    answered = _lost_heartbeats(server)
    sent = [0]

    @server.route("POST", "/workers/tasks/complete/batch")
    async def complete(request: httpx.Request, body: Any) -> httpx.Response:
        sent[0] += 1
        answered[1] = 1
        while answered[0] < 2:  # held until heartbeats said lease_lost twice
            await asyncio.sleep(0.005)
        return httpx.Response(200, json={"items": [outcome_item("t9")]})

    worker = server.worker(heartbeat_interval_ms=20)
    worker.register("process_image", lambda ctx: "done")
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_claimed == 1 and worker.stats().in_flight == 0)
    finally:
        run.stop()
    stats = worker.stats()
    assert sent[0] == 1
    assert (stats.tasks_completed, stats.tasks_lease_lost) == (1, 0)


def test_heartbeat_lease_lost_does_not_stop_resending_a_completion_through_an_outage() -> None:
    """The bug of 6929efc: the heartbeat's lease_lost dropped the re-send; its answer decides."""
    server = FakeServer()
    server.add("t9")
    answered = _lost_heartbeats(server)
    route = _outage_until_lost(
        answered, lambda: httpx.Response(200, json={"items": [outcome_item("t9")]})
    )
    server.route("POST", "/workers/tasks/complete/batch")(route)
    worker = server.worker(heartbeat_interval_ms=20)
    worker.register("process_image", lambda ctx: "done")
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_claimed == 1 and worker.stats().in_flight == 0)
    finally:
        run.stop()
    stats = worker.stats()
    assert route.calls[0] == 3  # the worker re-sent after the client's own retry
    assert (stats.tasks_completed, stats.tasks_lease_lost) == (1, 0)


def test_heartbeat_lease_lost_does_not_stop_resending_a_failure_through_an_outage() -> None:
    """Same for a failure: the fail call's own answer decides, not the heartbeat."""
    server = FakeServer()
    server.add("t9")
    answered = _lost_heartbeats(server)
    route = _outage_until_lost(
        answered, lambda: httpx.Response(200, json=task_outcome("t9", "failed"))
    )
    server.route("POST", "/workers/tasks/t9/fail")(route)
    worker = server.worker(heartbeat_interval_ms=20)

    def handler(ctx: TaskContext) -> None:
        raise PermanentError("no")

    worker.register("process_image", handler)
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_claimed == 1 and worker.stats().in_flight == 0)
    finally:
        run.stop()
    stats = worker.stats()
    assert route.calls[0] == 3
    assert (stats.tasks_failed, stats.tasks_lease_lost) == (1, 0)


def test_heartbeat_lease_lost_while_the_handler_runs_still_drops_the_task() -> None:
    """Before the result is on its way the heartbeat's lease_lost stands (P-WORKER-2)."""
    server = FakeServer()
    server.add("t9")
    _lost_heartbeats(server, armed=True)
    worker = server.worker(heartbeat_interval_ms=20)
    worker.register("process_image", lambda ctx: ctx.cancelled.wait(10) and "late")
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_claimed == 1 and worker.stats().in_flight == 0)
    finally:
        run.stop()
    stats = worker.stats()
    assert (stats.tasks_completed, stats.tasks_lease_lost) == (0, 1)
    assert server.sent("POST", "/workers/tasks/complete/batch") == []
