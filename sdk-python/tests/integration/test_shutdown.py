"""Graceful shutdown (P-SDK-7): abort the long-poll, finish in-flight work, fail leftovers."""

from __future__ import annotations

import threading
import time

from orch8 import Orch8Client, TaskContext

from .conftest import make_worker, wait_until


def _polling(transport) -> bool:
    return any(p == "/workers/tasks/poll/batch" for _, p, _ in transport.sent)


def test_stop_aborts_the_in_flight_long_poll_at_once(server, run_worker) -> None:
    worker, transport = make_worker(server, wait_ms=30000)
    worker.register("never", lambda ctx: None)
    rw = run_worker(worker)
    wait_until(lambda: _polling(transport), 10, "the first long-poll")
    started = time.monotonic()
    rw.stop_and_join(10)
    assert time.monotonic() - started < 5.0  # not the 30 s long-poll


def test_graceful_shutdown_finishes_and_reports_in_flight_task(
    server, client: Orch8Client, run_worker
) -> None:
    worker, transport = make_worker(server, wait_ms=30000, grace_period_ms=10000)
    started = threading.Event()
    seen: dict[str, object] = {}

    @worker.handler("slow")
    def slow(ctx: TaskContext) -> str:
        started.set()
        seen["cancelled"] = ctx.cancelled.wait(0.7)  # within grace: no cancellation
        return "finished during shutdown"

    rw = run_worker(worker)
    task = client.enqueue("slow")
    assert started.wait(10)
    t0 = time.monotonic()
    rw.stop_and_join(15)
    assert time.monotonic() - t0 < 8.0  # the 0.7 s handler, not the 30 s long-poll
    assert seen["cancelled"] is False
    done = client.get_task(task.id)
    assert done.status == "completed" and done.output == "finished during shutdown"
    paths = [p for _, p, _ in transport.sent]
    assert paths[transport.result_index(task.id)] == "/workers/tasks/complete/batch"
    assert transport.result_index(task.id) < paths.index(
        f"/workers/{worker.worker_id}"
    )  # reported before deregistering


def test_grace_period_exceeded_fails_leftover_with_shutdown(
    server, client: Orch8Client, run_worker
) -> None:
    worker, transport = make_worker(server, grace_period_ms=500)
    started = threading.Event()
    seen: dict[str, object] = {}

    @worker.handler("stuck")
    def stuck(ctx: TaskContext) -> str:
        started.set()
        seen["cancelled"] = ctx.cancelled.wait(10)
        seen["reason"] = ctx.cancel_reason
        return "too late"

    rw = run_worker(worker)
    task = client.enqueue("stuck")
    assert started.wait(10)
    t0 = time.monotonic()
    rw.stop_and_join(10)
    assert 0.5 <= time.monotonic() - t0 < 8.0  # grace 0.5 s, not the handler's 10 s
    wait_until(lambda: "reason" in seen, 5, "the handler to see the shutdown signal")
    assert seen == {"cancelled": True, "reason": "shutdown"}
    after = client.get_task(task.id)
    assert after.status in ("pending", "scheduled") and after.error.code == "shutdown"
    assert after.error.retryable
    attempt = client.list_task_attempts(task.id).attempts[0]
    assert attempt.outcome == "failed" and attempt.error.code == "shutdown"
    kinds = [kind for kind, _ in transport.results_for(task.id)]
    assert kinds == ["fail"]  # the late "too late" result was never sent
    assert worker.stats().tasks_failed == 1
