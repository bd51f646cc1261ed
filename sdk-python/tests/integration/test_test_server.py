"""orch8.testing.TestServer: a throwaway server with the test clock (docs/protocol.md 17).

Each test starts its own `orch8-server --test-clock` the way a user's test does (found as
`python -m orch8_server` in this venv) and checks what the helper promises: time skipped
only while the worker is idle (P-CLOCK-3), a 10-minute backoff and a 1-hour sleep in well
under 2 s of wall time, and clear errors when the server is missing or a run is stuck.
"""

from __future__ import annotations

import threading
import time

import pytest

from orch8 import RetryableError, TaskContext
from orch8._test_server import server_command
from orch8.testing import ServerNotFoundError, TestServer

TEN_MINUTES, HOUR = 600_000, 3_600_000
BACKOFF = {"max_attempts": 3, "initial_backoff_ms": TEN_MINUTES, "max_backoff_ms": TEN_MINUTES}


def flaky(ctx: TaskContext) -> dict:
    if ctx.attempt == 1:
        raise RetryableError("not yet")
    return {"attempt": ctx.attempt}


def test_a_ten_minute_backoff_is_skipped_P_CLOCK_2(orch8_test_server: TestServer) -> None:
    server = orch8_test_server  # the pytest11 fixture of the installed package
    worker = server.worker()
    worker.register("flaky", flaky)
    task = server.client.enqueue("flaky", retry={**BACKOFF, "jitter": 0})
    started = time.monotonic()
    done = server.run_until_final(worker, task_id=task.id)
    assert time.monotonic() - started < 2
    assert (done.status, done.attempt, done.output) == ("completed", 2, {"attempt": 2})
    # One skip of exactly the backoff, and the woken worker kept the attempt it claimed
    # (the same advance declared the idle worker dead: P-CLOCK-2's order).
    attempts = server.client.list_task_attempts(task.id).attempts
    assert [a.outcome for a in attempts] == ["failed", "completed"]
    gap = attempts[1].started_at - attempts[0].ended_at
    assert gap.total_seconds() * 1000 == TEN_MINUTES


def test_a_one_hour_sleep_step_is_skipped_P_CLOCK_3() -> None:
    with TestServer() as server:
        worker = server.worker()
        worker.register("wake", lambda ctx: {"woke_at_step": ctx.context["step_id"]})
        server.client.define_sequence(
            "nap",
            steps=[
                {"id": "nap", "handler": "sleep", "params": {"duration_ms": HOUR}},
                {"id": "wake", "handler": "wake"},
            ],
        )
        before = server.clock().now
        instance = server.client.start_instance("nap")
        started = time.monotonic()
        done = server.run_until_final(worker, instance_id=instance.id)
        assert time.monotonic() - started < 2
        assert (done.status, done.output) == ("completed", {"woke_at_step": "wake"})
        assert (server.clock().now - before).total_seconds() * 1000 == HOUR


def test_advance_waits_until_the_worker_holds_no_task_P_CLOCK_3() -> None:
    started, release = threading.Event(), threading.Event()

    def held(ctx: TaskContext) -> dict:
        started.set()
        return {"held": release.wait(10)}

    with TestServer("--lease-ms", "5000") as server:
        worker = server.worker()
        worker.register("held", held)
        task = server.client.enqueue("held")
        with server.running(worker):
            assert started.wait(10)
            # Skipping a minute now would expire the 5 s lease: advance waits for idle.
            threading.Timer(0.3, release.set).start()
            server.advance(60_000)
            done = server.client.get_task(task.id)
        assert (done.status, done.attempt, done.output) == ("completed", 1, {"held": True})


def test_a_run_with_nothing_left_to_do_fails_at_once() -> None:
    with TestServer() as server:
        worker = server.worker()
        worker.register("other", lambda ctx: None)
        task = server.client.enqueue("nobody_handles_this")
        with pytest.raises(AssertionError, match=r"not final, no task is left to run"):
            server.run_until_final(worker, task_id=task.id, timeout_ms=10_000)


def test_a_missing_server_names_what_was_looked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH8_SERVER", "/nowhere/orch8-server --verbose")
    assert server_command() == ["/nowhere/orch8-server", "--verbose"]
    with pytest.raises(ServerNotFoundError, match=r"pip install orch8-server"):
        TestServer()
    monkeypatch.delenv("ORCH8_SERVER")
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(ServerNotFoundError) as caught:
        server_command()
    for looked_for in ("ORCH8_SERVER", "orch8-server` is not on PATH", "python -m orch8_server"):
        assert looked_for in str(caught.value)
