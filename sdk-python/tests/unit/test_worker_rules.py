"""The SDK parity rules of protocol section 14 (P-SDK-11, P-SDK-13 .. P-SDK-22), no network."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
import time
from typing import Any

import httpx
import pytest

import orch8
from orch8 import LeaseLostError, TaskContext
from orch8.worker._queues import QueueSelection
from orch8.worker._runtime import Runtime, Settings
from orch8.worker.observe import Observer

from .conftest import problem
from .fake_server import FakeServer, Running, outcome_item, wait_until

# --- P-SDK-13 poll limits ------------------------------------------------------------------


def test_concurrency_150_asks_for_at_most_100_and_polls_again_for_the_rest() -> None:
    server = FakeServer()
    for n in range(150):
        server.add(f"t{n}")
    release = threading.Event()
    worker = server.worker(concurrency=150)
    worker.register("process_image", lambda ctx: release.wait(10))
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_claimed == 150)
        sizes = [b["batch_size"] for b in server.sent("POST", "/workers/tasks/poll/batch")]
        assert sizes[:2] == [100, 50]
        assert max(sizes) <= 100
    finally:
        release.set()
        run.stop()
    assert worker.stats().tasks_completed == 150


def test_more_than_50_handlers_are_polled_in_chunks_round_robin() -> None:
    server = FakeServer()
    names = [f"h{n:03d}" for n in range(120)]
    server.add("last", handler_name="h119")
    worker = server.worker(concurrency=1)
    for name in names:
        worker.register(name, lambda ctx: "ok")
    run = Running(worker)
    try:
        wait_until(lambda: server.completed == ["last"])
    finally:
        run.stop()
    polls = [b["handler_names"] for b in server.sent("POST", "/workers/tasks/poll/batch")]
    assert all(len(p) <= 50 for p in polls)
    assert polls[:3] == [names[:50], names[50:100], names[100:]]


# --- P-SDK-14 no handler -------------------------------------------------------------------


def test_a_task_without_handler_fails_permanently_with_no_handler() -> None:
    async def main() -> dict[str, Any]:
        server = FakeServer()
        rt = _runtime(server, {"a": lambda ctx: 1, "b": lambda ctx: 2})
        handler = rt._no_handler("zzz")
        with pytest.raises(orch8.PermanentError) as info:
            await handler(None)  # type: ignore[arg-type]
        err = info.value
        return {"code": err.code, "details": err.details}

    got = asyncio.run(main())
    assert got == {
        "code": "no_handler",
        "details": {"handler_name": "zzz", "known_handlers": ["a", "b"]},
    }


def test_worker_fails_a_claimed_task_it_has_no_handler_for() -> None:
    server = FakeServer()
    server.add("t1", handler_name="unknown")

    @server.route("POST", "/workers/tasks/poll/batch")
    def poll(request: httpx.Request, body: Any) -> httpx.Response:
        with server.lock:
            tasks, server.pending[:] = list(server.pending), []
        return httpx.Response(200, json={"tasks": tasks, "next_poll_after_ms": 0})

    worker = server.worker()
    worker.register("process_image", lambda ctx: 1)
    run = Running(worker)
    try:
        wait_until(lambda: server.failed)
    finally:
        run.stop()
    fail = server.failed[0]
    assert (fail["retryable"], fail["code"]) == (False, "no_handler")
    assert fail["details"] == {"handler_name": "unknown", "known_handlers": ["process_image"]}
    assert worker.stats().tasks_failed == 1


# --- P-SDK-15 outputs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [math.nan, math.inf, {"when": object()}, "cycle"],
    ids=["nan", "infinity", "unsupported-type", "cycle"],
)
def test_output_that_is_not_strict_json_fails_permanently(output: Any) -> None:
    if output == "cycle":
        output = []
        output.append(output)
    server = FakeServer()
    server.add("t1")
    worker = server.worker()
    worker.register("process_image", lambda ctx: output)
    run = Running(worker)
    try:
        wait_until(lambda: server.failed)
    finally:
        run.stop()
    fail = server.failed[0]
    assert (fail["retryable"], fail["code"]) == (False, "invalid_output")
    assert set(fail["details"]) == {"type", "message"}
    assert server.sent("POST", "/workers/tasks/complete/batch") == []  # never sent
    assert len(server.failed) == 1


def test_a_refused_batch_is_split_and_an_item_refused_alone_is_output_rejected() -> None:
    server = FakeServer()
    for n in range(4):
        server.add(f"t{n}")

    @server.route("POST", "/workers/tasks/complete/batch")
    def complete(request: httpx.Request, body: Any) -> httpx.Response:
        ids = [i["task_id"] for i in body["items"]]
        if "t2" in ids:  # t2's output is too large, alone or in company
            return httpx.Response(413, json=problem(413, "payload_too_large"))
        with server.lock:
            server.completed += ids
        return httpx.Response(200, json={"items": [outcome_item(i) for i in ids]})

    release = threading.Event()
    worker = server.worker(concurrency=4)
    worker.register("process_image", lambda ctx: release.wait(10) and ctx.id)
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_claimed == 4)
        release.set()
        wait_until(lambda: sorted(server.completed) == ["t0", "t1", "t3"] and server.failed)
    finally:
        release.set()
        run.stop()
    assert [f["task_id"] for f in server.failed] == ["t2"]
    fail = server.failed[0]
    assert (fail["retryable"], fail["code"]) == (False, "output_rejected")
    assert fail["details"] == {"status": 413, "code": "payload_too_large"}
    sizes = [len(b["items"]) for b in server.sent("POST", "/workers/tasks/complete/batch")]
    assert 1 in sizes  # t2 went alone before it was given up
    stats = worker.stats()
    assert (stats.tasks_completed, stats.tasks_failed) == (3, 1)


# --- P-SDK-16 Retry-After on polls -------------------------------------------------------


def test_poll_outage_waits_for_retry_after() -> None:
    server = FakeServer()
    answered: list[float] = []

    @server.route("POST", "/workers/tasks/poll/batch")
    def poll(request: httpx.Request, body: Any) -> httpx.Response:
        answered.append(time.monotonic())
        if len(answered) == 1:
            return httpx.Response(
                503, json=problem(503, "unavailable"), headers={"Retry-After": "0.3"}
            )
        return httpx.Response(200, json={"tasks": [], "next_poll_after_ms": 0})

    worker = server.worker(outage_backoff_ms=(1, 2))
    worker.register("process_image", lambda ctx: 1)
    run = Running(worker)
    try:
        wait_until(lambda: len(answered) >= 3)
    finally:
        run.stop()
    # The client does not retry a poll (x-orch8-retry: never); the worker waits Retry-After.
    assert 0.3 <= answered[1] - answered[0] < 1.0
    assert worker.stats().poll_errors == 1


# --- P-SDK-17 second signal ----------------------------------------------------------------


def test_second_signal_ends_the_grace_period_even_for_a_deaf_sync_handler() -> None:
    server = FakeServer()
    server.add("t1")
    started = threading.Event()

    def deaf(ctx: TaskContext) -> str:
        started.set()
        time.sleep(30)  # ignores ctx.cancelled on purpose
        return "late"

    worker = server.worker(grace_period_ms=60_000)
    worker.register("process_image", deaf)
    run = Running(worker)
    assert started.wait(10)
    rt = worker._runtime
    assert rt is not None
    began = time.monotonic()
    rt.loop.call_soon_threadsafe(rt.signal_stop, "SIGTERM")
    wait_until(lambda: rt.stop_requested)
    rt.loop.call_soon_threadsafe(rt.signal_stop, "SIGTERM")
    run.join(6)
    assert time.monotonic() - began < 5
    fail = server.failed[0]
    assert (fail["task_id"], fail["code"], fail["retryable"]) == ("t1", "shutdown", True)
    assert server.sent("DELETE", "/workers/w")
    assert server.sent("POST", "/workers/tasks/complete/batch") == []  # late result dropped
    stats = worker.stats()
    assert (stats.tasks_failed, stats.in_flight) == (1, 0)


# --- P-SDK-18 quiet precedence -------------------------------------------------------------


def test_local_and_operator_quiet_are_independent() -> None:
    async def main() -> list[bool]:
        rt = _runtime(FakeServer(), {"a": lambda ctx: 1})
        seen = [rt.claiming]
        rt.set_local_quiet(True)
        rt.apply_directive("quiet")
        rt.set_local_quiet(False)  # SIGCONT does not undo the operator's quiet
        seen.append(rt.claiming)
        rt.apply_directive("running")
        seen.append(rt.claiming)
        rt.apply_directive("quiet")
        rt.set_local_quiet(True)
        rt.apply_directive("running")  # the operator does not undo a local quiet
        seen.append(rt.claiming)
        rt.apply_directive("terminate")  # wins over both
        seen.append(rt.stop_requested)
        return seen

    assert asyncio.run(main()) == [True, False, True, False, True]


# --- P-SDK-19 handler heartbeat ------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "error", "reason"),
    [
        ("lease_lost", LeaseLostError, "lease_lost"),
        ("task_cancelled", orch8.TaskCancelledError, "cancelled"),
    ],
)
def test_handler_heartbeat_409_raises_and_no_result_is_sent(
    code: str, error: type, reason: str
) -> None:
    server = FakeServer()
    server.add("t1")

    @server.route("POST", "/workers/tasks/t1/heartbeat")
    def beat(request: httpx.Request, body: Any) -> httpx.Response:
        return httpx.Response(409, json=problem(409, code))

    seen: dict[str, Any] = {}

    def handler(ctx: TaskContext) -> str:
        try:
            ctx.heartbeat(progress={"p": 1}, lease_ms=5000)
        except orch8.Orch8Error as exc:
            seen["error"] = type(exc)
            seen["cancelled"] = (ctx.is_cancelled, ctx.cancel_reason)
        return "ignored"

    worker = server.worker()
    worker.register("process_image", handler)
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_lease_lost + worker.stats().tasks_cancelled)
    finally:
        run.stop()
    assert seen == {"error": error, "cancelled": (True, reason)}
    beat_body = server.sent("POST", "/workers/tasks/t1/heartbeat")[0]
    assert beat_body["lease_ms"] == 5000 and "extend_ms" not in beat_body
    assert server.sent("POST", "/workers/tasks/complete/batch") == [] and server.failed == []


# --- P-SDK-20 typed errors -----------------------------------------------------------------


def test_typed_errors_carry_code_details_checkpoint_and_retry_after() -> None:
    server = FakeServer()
    server.add("t1")
    server.add("t2")
    server.add("t3")

    def handler(ctx: TaskContext) -> None:
        if ctx.id == "t1":
            raise orch8.RetryableError(
                "later", code="busy", details={"d": 1}, checkpoint={"c": 1}, retry_after_ms=250
            )
        if ctx.id == "t2":
            raise orch8.PermanentError("never", code="bad", details={"d": 2}, checkpoint={"c": 2})
        raise KeyError("missing")

    worker = server.worker(concurrency=3)
    worker.register("process_image", handler)
    run = Running(worker)
    try:
        wait_until(lambda: len(server.failed) == 3)
    finally:
        run.stop()
    by_id = {f["task_id"]: f for f in server.failed}
    assert by_id["t1"] | {"lease_id": None} == {
        "task_id": "t1",
        "error": "later",
        "retryable": True,
        "code": "busy",
        "details": {"d": 1},
        "checkpoint": {"c": 1},
        "retry_after_ms": 250,
        "lease_id": None,
    }
    assert (by_id["t2"]["retryable"], by_id["t2"]["checkpoint"]) == (False, {"c": 2})
    assert by_id["t3"]["code"] == "unhandled_error"
    assert set(by_id["t3"]["details"]) == {"type", "message", "stack"}
    assert by_id["t3"]["details"]["type"] == "KeyError"


# --- P-SDK-21 identity and registration ----------------------------------------------------


def test_default_worker_id_and_registration_body() -> None:
    worker_id = orch8.Worker().worker_id
    assert re.fullmatch(r".+-\d+-[0-9a-f]{8}", worker_id), worker_id
    server = FakeServer()
    worker = server.worker(concurrency=3)
    worker.register("b", lambda ctx: 1)
    worker.register("a", lambda ctx: 1)
    run = Running(worker)
    try:
        wait_until(lambda: server.sent("POST", "/workers/tasks/poll/batch"))
    finally:
        run.stop()
    body = server.sent("POST", "/workers")[0]
    assert body["queues"] == ["default"] and body["labels"] == {}
    assert (body["handlers"], body["concurrency"]) == (["a", "b"], 3)
    assert body["sdk"] == f"orch8-python/{orch8.__version__}"
    assert isinstance(body["pid"], int) and body["hostname"]


# --- P-SDK-11 counters and hooks -----------------------------------------------------------


def test_counters_and_hooks_with_one_payload_each() -> None:
    server = FakeServer()
    server.add("ok")
    server.add("bad")
    polls = 0

    @server.route("POST", "/workers/tasks/poll/batch")
    def poll(request: httpx.Request, body: Any) -> httpx.Response:
        nonlocal polls
        polls += 1
        if polls == 1:
            return httpx.Response(503, json=problem(503, "unavailable"))
        return server.default("POST", "/workers/tasks/poll/batch", body)

    events: dict[str, list[Any]] = {}
    worker = server.worker(concurrency=2)

    def record(name: str) -> Any:
        return lambda event: events.setdefault(name, []).append(event)

    worker.on_poll(record("poll"))
    worker.on_task_start(record("task_start"))
    worker.on_task_complete(record("task_complete"))
    worker.on_task_fail(record("task_fail"))
    worker.on_error(record("error"))
    worker.on_poll(lambda event: 1 / 0)  # a broken hook never breaks the worker

    def handler(ctx: TaskContext) -> str:
        if ctx.id == "bad":
            raise orch8.PermanentError("no")
        return "yes"

    worker.register("process_image", handler)
    run = Running(worker)
    try:
        wait_until(lambda: events.get("task_complete") and events.get("task_fail"))
    finally:
        run.stop()
    stats = worker.stats()
    assert (stats.tasks_claimed, stats.tasks_completed, stats.tasks_failed) == (2, 1, 1)
    assert stats.in_flight == 0 and stats.poll_errors == 1
    assert stats.polls == polls  # every HTTP poll, the failed one included
    assert events["error"][0].operation == "poll"
    assert isinstance(events["error"][0].error, orch8.UnavailableError)
    assert sum(e.claimed for e in events["poll"]) == 2
    assert all(e.duration_ms >= 0 for e in events["poll"])
    assert {e.task.id for e in events["task_start"]} == {"ok", "bad"}
    assert events["task_complete"][0].task.id == "ok"
    assert events["task_complete"][0].duration_ms >= 0
    fail = events["task_fail"][0]
    assert (fail.task.id, fail.code, fail.retryable) == ("bad", "permanent_error", False)


def test_stats_invariant_holds_while_tasks_run() -> None:
    server = FakeServer()
    for n in range(5):
        server.add(f"t{n}")
    release = threading.Event()
    worker = server.worker(concurrency=5)
    worker.register("process_image", lambda ctx: release.wait(10))
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_claimed == 5)
        s = worker.stats()
        assert s.in_flight == 5
        release.set()
        wait_until(lambda: worker.stats().tasks_completed == 5)
    finally:
        release.set()
        run.stop()
    s = worker.stats()
    total = s.tasks_completed + s.tasks_failed + s.tasks_lease_lost + s.tasks_cancelled
    assert s.tasks_claimed == total + s.in_flight


# --- P-SDK-22 logs say why -----------------------------------------------------------------


def test_library_logging_defaults() -> None:
    handlers = logging.getLogger("orch8").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
    assert logging.getLogger("httpx").getEffectiveLevel() >= logging.WARNING


def test_poll_warning_names_status_and_code(caplog: pytest.LogCaptureFixture) -> None:
    server = FakeServer()

    @server.route("POST", "/workers/tasks/poll/batch")
    def poll(request: httpx.Request, body: Any) -> httpx.Response:
        return httpx.Response(503, json=problem(503, "unavailable"))

    worker = server.worker()
    worker.register("process_image", lambda ctx: 1)
    with caplog.at_level(logging.WARNING, logger="orch8"):
        run = Running(worker)
        try:
            wait_until(lambda: worker.stats().poll_errors >= 1)
        finally:
            run.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("poll failed" in w and "503" in w and "unavailable" in w for w in warnings)


def _runtime(server: FakeServer, handlers: dict[str, Any]) -> Runtime:
    settings = Settings("w", QueueSelection(), 2, 1, 100, None, 1000, None, {}, (1, 2))
    return Runtime(settings, handlers, Observer("w"), server.client(), None)  # type: ignore[arg-type]
