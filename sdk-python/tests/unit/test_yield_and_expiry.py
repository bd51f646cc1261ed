"""P-SDK-32 (a handler yields its task with a checkpoint) and P-SDK-33 (a task whose
good_until passed before its handler started is released unrun), no network."""

from __future__ import annotations

import datetime
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orch8
from orch8 import TaskContext
from orch8.testing import TestTask

from .fake_server import FakeServer, Running, wait_until


def _iso(at: datetime.datetime) -> str:
    return at.astimezone(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _run_until_released(server: FakeServer, worker: orch8.Worker, n: int) -> None:
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_released == n)
    finally:
        run.stop()


def test_a_yield_releases_the_task_with_its_checkpoint_and_delay() -> None:
    server = FakeServer()
    server.add("t1", lease={"id": "lease_7", "worker_id": "w", "attempt": 1,
                            "expires_at": "2999-01-01T00:00:00.000Z"})  # fmt: skip
    worker = server.worker()

    def handler(ctx: TaskContext) -> Any:
        raise orch8.Yield(checkpoint={"cursor": 1000}, delay_ms=250)

    worker.register("process_image", handler)
    _run_until_released(server, worker, 1)
    assert server.sent("POST", "/workers/tasks/t1/release") == [
        {"lease_id": "lease_7", "delay_ms": 250, "checkpoint": {"cursor": 1000}}
    ]
    assert server.failed == [] and server.completed == []
    stats = worker.stats()
    assert (stats.tasks_claimed, stats.tasks_released, stats.tasks_failed) == (1, 1, 0)
    assert stats.in_flight == 0


def test_a_yield_without_checkpoint_keeps_the_stored_one_and_clamps_the_delay() -> None:
    server = FakeServer()
    server.add("t1")
    server.add("t2")
    worker = server.worker()

    async def handler(ctx: TaskContext) -> Any:
        raise orch8.Yield(delay_ms=-5 if ctx.id == "t1" else 10**12)

    worker.register("process_image", handler)
    _run_until_released(server, worker, 2)
    assert server.sent("POST", "/workers/tasks/t1/release") == [
        {"lease_id": "lease_1", "delay_ms": 0}
    ]
    assert server.sent("POST", "/workers/tasks/t2/release")[0]["delay_ms"] == 86_400_000


def test_a_task_past_its_good_until_is_released_without_running() -> None:
    server = FakeServer()
    server.add("late", good_until=_iso(_now() - datetime.timedelta(seconds=1)))
    server.add("fine", good_until=_iso(_now() + datetime.timedelta(hours=1)))
    ran: list[str] = []
    started: list[str] = []
    worker = server.worker()
    worker.on_task_start(lambda event: started.append(event.task.id))
    worker.register("process_image", lambda ctx: ran.append(ctx.id))
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_released == 1 and server.completed == ["fine"])
    finally:
        run.stop()
    assert ran == ["fine"] and started == ["fine"]
    assert server.sent("POST", "/workers/tasks/late/release") == [
        {"lease_id": "lease_1", "delay_ms": 0}
    ]
    assert server.sent("POST", "/workers/tasks/fine/release") == []


def test_a_task_that_expires_while_waiting_for_an_executor_thread_never_runs() -> None:
    # One thread for two slots: "second" waits inside the worker while "first" holds it.
    server = FakeServer()
    deadline = _now() + datetime.timedelta(milliseconds=300)
    server.add("first")
    server.add("second", good_until=_iso(deadline))
    go = threading.Event()
    ran: list[str] = []

    def handler(ctx: TaskContext) -> Any:
        ran.append(ctx.id)
        if ctx.id == "first":
            go.wait(10)
        return "ok"

    with ThreadPoolExecutor(max_workers=1) as executor:
        worker = server.worker(concurrency=2, executor=executor)
        worker.register("process_image", handler)
        run = Running(worker)
        try:
            wait_until(lambda: ran == ["first"] and worker.stats().tasks_claimed == 2)
            wait_until(lambda: _now() > deadline)
            go.set()
            wait_until(lambda: worker.stats().tasks_released == 1 and server.completed)
        finally:
            go.set()
            run.stop()
    assert ran == ["first"]
    assert server.sent("POST", "/workers/tasks/second/release") == [
        {"lease_id": "lease_1", "delay_ms": 0}
    ]


def test_the_kit_reports_a_yield_as_released() -> None:
    def handler(ctx: TaskContext) -> Any:
        raise orch8.Yield(checkpoint={"page": 3}, delay_ms=50)

    outcome = TestTask().run(handler)
    assert (outcome.status, outcome.checkpoint, outcome.delay_ms) == ("released", {"page": 3}, 50)
    assert outcome.code is None


def test_a_yield_with_a_checkpoint_that_is_not_an_object_fails_the_attempt() -> None:
    def handler(ctx: TaskContext) -> Any:
        raise orch8.Yield(checkpoint=[1, 2])  # type: ignore[arg-type]

    outcome = TestTask().run(handler)
    assert (outcome.status, outcome.code) == ("failed", "unhandled_error")
    assert outcome.details is not None and outcome.details["type"] == "TypeError"
