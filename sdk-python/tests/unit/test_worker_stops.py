"""How a worker stops: configuration errors (P-SDK-28) and shutdown wording and exit (P-SDK-29)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import orch8
from orch8 import TaskContext

from .conftest import BASE, problem
from .fake_server import FakeServer, Running, wait_until

# --- P-SDK-28 configuration errors stop the worker ------------------------------------------


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        (httpx.Response(501, text="<html>Not Implemented</html>"), "(501 http_501)"),
        (httpx.Response(404, json=problem(404, "not_found", "no route")), "(404 not_found)"),
        (httpx.Response(405, text=""), "(405 http_405)"),
        (httpx.Response(301, headers={"Location": "https://x/"}), "(301 http_301)"),
    ],
)
def test_p_sdk_28_registration_refused_for_good_ends_run_at_once(
    answer: httpx.Response, named: str
) -> None:
    """Not an outage, not 401/403: run() raises Orch8Error naming URL, status and code."""
    server = FakeServer()
    server.route("POST", "/workers")(lambda request, body: answer)
    worker = server.worker()
    worker.register("process_image", lambda ctx: "done")
    run = Running(worker)
    with pytest.raises(orch8.Orch8Error) as info:
        run.join(5)
    text = str(info.value)
    assert BASE in text and text.endswith(named), text
    assert len(server.sent("POST", "/workers")) == 1  # not retried
    assert server.sent("POST", "/workers/tasks/poll/batch") == []


def test_p_sdk_28_an_outage_at_registration_is_still_ridden_out() -> None:
    server = FakeServer()
    answers = iter([httpx.Response(502, text="bad gateway")])

    @server.route("POST", "/workers")
    def register(request: httpx.Request, body: Any) -> httpx.Response:
        return next(answers, None) or server.default("POST", "/workers", body)

    worker = server.worker()
    worker.register("process_image", lambda ctx: "done")
    run = Running(worker)
    try:
        wait_until(lambda: server.sent("POST", "/workers/tasks/poll/batch"))
    finally:
        run.stop()
    assert len(server.sent("POST", "/workers")) >= 2


# --- P-SDK-29 shutdown wording, signal logs and exit ---------------------------------------


def test_p_sdk_29_grace_period_message() -> None:
    server = FakeServer()
    server.add("t1")
    started = threading.Event()

    def waits(ctx: TaskContext) -> str:
        started.set()
        ctx.cancelled.wait(10)
        return "late"

    worker = server.worker(grace_period_ms=50)
    worker.register("process_image", waits)
    run = Running(worker)
    assert started.wait(10)
    run.stop()
    [fail] = server.failed
    assert fail["error"] == "worker w shut down: grace period of 50 ms ended"
    assert (fail["code"], fail["retryable"]) == ("shutdown", True)


@pytest.mark.parametrize("mode", ["run", "run_async"])
def test_p_sdk_29_a_fail_waiting_out_retry_after_is_given_up_before_run_returns(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """P-SDK-29, P-SDK-11: when run() or run_async() (on the caller's loop) returns, the
    fail still waiting out its Retry-After was given up (given_up at error), counted as
    lease lost and its hook run, and no task of the worker's is left on the loop."""
    server = FakeServer()
    server.add("t1")
    server.route("POST", "/workers/tasks/t1/fail")(
        lambda request, body: httpx.Response(
            503, json=problem(503, "unavailable"), headers={"Retry-After": "30"}
        )
    )
    worker = server.worker(grace_period_ms=100)
    abandoned: list[str] = []
    worker.on_task_abandoned(lambda event: abandoned.append(event.reason))

    def fails(ctx: TaskContext) -> str:
        raise RuntimeError("boom")

    worker.register("process_image", fails)

    def first_fail() -> object:
        return server.sent("POST", "/workers/tasks/t1/fail")

    left: list[asyncio.Task[Any]] = []
    if mode == "run":
        run = Running(worker)
        wait_until(first_fail)
        run.stop(timeout=10)
    else:

        async def main() -> list[asyncio.Task[Any]]:
            running = asyncio.ensure_future(worker.run_async())
            await asyncio.to_thread(wait_until, first_fail)
            worker.stop()
            await asyncio.wait_for(running, 10)
            return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

        left = asyncio.run(main())
    stats = worker.stats()
    assert (stats.tasks_lease_lost, stats.in_flight, abandoned) == (1, 0, ["lease_lost"]), stats
    assert left == [], left
    given_up = [r for r in caplog.records if getattr(r, "event", None) == "given_up"]
    assert [r.levelname for r in given_up] == ["ERROR"], caplog.text
    assert "result not delivered before the worker stopped" in given_up[0].getMessage()


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_p_sdk_29_second_signal_message_and_logs(
    signal_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The first signal is logged at info, the second at warning, each naming the signal."""
    server = FakeServer()
    server.add("t1")
    started = threading.Event()

    def deaf(ctx: TaskContext) -> str:
        started.set()
        time.sleep(3)  # ignores ctx.cancelled on purpose
        return "late"

    worker = server.worker(grace_period_ms=60_000)
    worker.register("process_image", deaf)
    with caplog.at_level(logging.INFO, logger="orch8"):
        run = Running(worker)
        assert started.wait(10)
        rt = worker._runtime
        assert rt is not None
        rt.loop.call_soon_threadsafe(rt.signal_stop, signal_name)
        wait_until(lambda: rt.stop_requested)
        rt.loop.call_soon_threadsafe(rt.signal_stop, signal_name)
        run.join(6)
    [fail] = server.failed
    expected = f"worker w shut down: second signal {signal_name} ended the grace period"
    assert fail["error"] == expected
    said = [(r.levelno, vars(r).get("event"), vars(r).get("signal")) for r in caplog.records]
    signals = [s for s in said if s[1] in ("signal", "second_signal")]
    assert signals == [
        (logging.INFO, "signal", signal_name),
        (logging.WARNING, "second_signal", signal_name),
    ], said


SCRIPT = """
import sys, threading, time
sys.path.insert(0, {root!r})
from tests.unit.fake_server import FakeServer

server = FakeServer()
server.add("t1")
worker = server.worker(grace_period_ms=50)
started = threading.Event()

def deaf(ctx):
    started.set()
    time.sleep(60)  # a busy synchronous handler that never looks at ctx.cancelled

worker.register("process_image", deaf)
threading.Thread(target=lambda: (started.wait(10), worker.stop()), daemon=True).start()
worker.run()
print("run returned", flush=True)
"""


def test_p_sdk_29_a_process_whose_run_returned_exits_at_once() -> None:
    """Nothing the worker started (threads, timers) keeps the interpreter alive."""
    root = str(Path(__file__).resolve().parents[2])
    code = textwrap.dedent(SCRIPT.format(root=root))
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, cwd=root
    )
    assert done.returncode == 0, done.stderr
    assert "run returned" in done.stdout
    assert time.monotonic() - began < 15  # not the handler's 60 s
