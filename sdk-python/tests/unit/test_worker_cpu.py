"""The per-task shortcuts of the worker's hot path keep its rules (issue 30, CPU per task)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading

import httpx
import pytest

from orch8 import TaskContext
from orch8.errors import LeaseLostError
from orch8.testing import TestTask
from orch8.worker.observe import Observer

from .fake_server import FakeServer
from .test_worker_units import _all_completed, _Server, _slot


def test_a_completion_whose_runner_is_cancelled_still_goes_out() -> None:
    """The runner awaits its verdict without a shield: cancelling it leaves the result sent."""
    server = _Server(_all_completed)

    async def main() -> asyncio.Task[object]:
        completer = server.completer()
        run = asyncio.ensure_future(completer.complete(_slot("t1"), 1))
        await asyncio.sleep(0)  # its completion is queued, the batch not yet sent
        run.cancel()
        await completer.aclose()
        return run

    run = asyncio.run(main())
    assert run.cancelled()
    assert [[i["task_id"] for i in items] for _, items in server.requests] == [["t1"]]


def test_a_completion_cancelled_during_an_outage_is_resent() -> None:
    async def answer(items: list[dict], n: int) -> httpx.Response:
        if n == 1:
            return httpx.Response(503, json={"status": 503, "code": "unavailable"})
        return await _all_completed(items, n)

    server = _Server(answer)

    async def main() -> None:
        completer = server.completer()
        run = asyncio.ensure_future(completer.complete(_slot("t1"), 1))
        await asyncio.sleep(0)
        run.cancel()
        await completer.aclose()

    asyncio.run(main())
    assert [[i["task_id"] for i in items] for _, items in server.requests] == [["t1"], ["t1"]]


def test_a_line_below_the_level_builds_no_fields(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    observer = Observer("w")
    built: list[object] = []
    monkeypatch.setattr(observer, "extra", lambda *a, **k: built.append(a) or {})
    with caplog.at_level(logging.INFO, logger="orch8.worker"):
        observer.started(_slot("t1").ctx)  # a debug line
        assert built == []
        observer.line(logging.INFO, "start", "worker starting")
    assert len(built) == 1 and [r.message for r in caplog.records] == ["orch8: worker starting"]


# --- async handlers run in their runner's task ----------------------------------------------


def test_an_async_handler_deaf_to_its_cancellation_does_not_hold_up_shutdown() -> None:
    """P-SDK-7 / P-SDK-17: after the grace period it is cancelled; ignoring that, it is left
    running and run_async() still returns within 5 s (the loop's own teardown waits for it)."""
    server = FakeServer()
    server.add("t1")
    started, let_go, returned = threading.Event(), threading.Event(), threading.Event()
    cancels: list[int] = []

    async def deaf(ctx: TaskContext) -> str:
        started.set()
        while not let_go.is_set():
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                cancels.append(1)  # ignored on purpose
        return "late"

    worker = server.worker(grace_period_ms=50)
    worker.register("process_image", deaf)

    async def main() -> None:
        await worker.run_async()
        returned.set()
        let_go.set()

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    assert started.wait(10)
    worker.stop()
    assert returned.wait(6)
    let_go.set()
    thread.join(10)
    assert cancels and not thread.is_alive()
    [fail] = server.failed
    assert (fail["code"], server.completed) == ("shutdown", [])


def test_a_handler_raising_cancelled_error_itself_fails_with_shutdown() -> None:
    async def handler(ctx: TaskContext) -> None:
        raise asyncio.CancelledError()

    outcome = TestTask().run(handler)
    assert (outcome.status, outcome.code, outcome.retryable) == ("failed", "shutdown", True)


def test_the_kit_shutdown_leaves_the_callers_task_uncancelled() -> None:
    """P-KIT-4: the abort cancels the handler, not whoever awaits run_async afterwards."""
    task = TestTask(on_heartbeat=lambda _: task.shutdown())

    async def handler(ctx: TaskContext) -> None:
        with contextlib.suppress(LeaseLostError):
            await ctx.heartbeat_async(progress=1)
        await asyncio.Event().wait()

    async def main() -> tuple[str | None, int]:
        outcome = await task.run_async(handler)
        await asyncio.sleep(0)  # no cancellation left pending for the caller
        current = asyncio.current_task()
        return outcome.code, getattr(current, "cancelling", lambda: 0)()

    assert asyncio.run(main()) == ("shutdown", 0)


class _Odd(BaseException):
    """Not an Exception: a handler task gave it as its exception(), classified unhandled."""


def test_a_base_exception_from_an_async_handler_fails_it_as_unhandled() -> None:
    async def handler(ctx: TaskContext) -> None:
        raise _Odd("odd")

    outcome = TestTask().run(handler)
    assert (outcome.status, outcome.code, outcome.retryable) == ("failed", "unhandled_error", True)
    assert outcome.details is not None and outcome.details["type"] == "_Odd"
