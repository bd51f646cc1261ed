"""What docs/protocol.md section 15 pins so the three SDKs agree, no network.

The receive span's attributes (P-TEL-3), schedule_to_start clamped at 0 (P-TEL-4), the
no_handler process span and duration point (P-TEL-3), registration as a heartbeat (P-TEL-5).
"""

from __future__ import annotations

import asyncio
import datetime
import time
import types
from typing import Any

import httpx
from opentelemetry.trace import SpanKind, StatusCode

from orch8.models import ClaimedTask
from orch8.worker._loops import register_until_ok

from .conftest import claimed_task
from .fake_server import FakeServer, Running, wait_until
from .test_otel_outcomes import otel, points  # noqa: F401 (otel is a fixture)


def _claimed(task_id: str, queue: str, **over: Any) -> ClaimedTask:
    return ClaimedTask.from_dict(claimed_task(task_id, queue_name=queue, **over))


def test_receive_span_attributes_one_queue_and_several_p_tel_3(otel: Any) -> None:  # noqa: F811
    """P-TEL-3: CLIENT span from the poll's send; `receive` alone without a destination for several queues."""
    telemetry, spans, _ = otel
    worker = telemetry.worker("w1", 4)
    began = time.time_ns() - 1_000_000_000
    worker.polled(began, [_claimed("t1", "a"), _claimed("t2", "a"), _claimed("t3", "a")])
    worker.polled(began, [_claimed("t4", "a"), _claimed("t5", "b")])
    worker.polled(began, [])  # claims nothing: no span
    one, several = spans.get_finished_spans()
    assert (one.name, one.kind, one.start_time) == ("receive a", SpanKind.CLIENT, began)
    assert dict(one.attributes or {}) == {
        "messaging.system": "orch8",
        "messaging.operation.type": "receive",
        "messaging.destination.name": "a",
        "messaging.batch.message_count": 3,
        "orch8.worker.id": "w1",
    }
    assert several.name == "receive"
    assert dict(several.attributes or {}) == {
        "messaging.system": "orch8",
        "messaging.operation.type": "receive",
        "messaging.batch.message_count": 2,
        "orch8.worker.id": "w1",
    }


def test_schedule_to_start_is_0_when_ready_at_is_after_the_claim_p_tel_4(otel: Any) -> None:  # noqa: F811
    """P-TEL-4: the clocks disagree (ready_at later than now): 0, not a negative wait."""
    telemetry, _, reader = otel
    worker = telemetry.worker("w1", 1)
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=5)
    worker.task_started(_claimed("t1", "q", ready_at=future.isoformat()), None)
    data = reader.get_metrics_data()
    [point] = [
        p
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "orch8.worker.task.schedule_to_start"
        for p in m.data.data_points
    ]
    assert (point.count, point.sum) == (1, 0)


def test_no_handler_gets_its_process_span_and_duration_point_p_tel_3(otel: Any) -> None:  # noqa: F811
    """P-TEL-3, P-TEL-4: a task failed with no_handler: span failed/no_handler/ERROR and a duration."""
    telemetry, spans, reader = otel
    server = FakeServer()
    server.add("t1", handler_name="resize")

    @server.route("POST", "/workers/tasks/poll/batch")
    def poll(request: httpx.Request, body: Any) -> httpx.Response:
        # The real server never hands out a handler not asked for; a stale registration can.
        with server.lock:
            tasks, server.pending[:] = list(server.pending), []
        return httpx.Response(200, json={"tasks": tasks, "next_poll_after_ms": 0})

    worker = server.worker(telemetry=telemetry)
    worker.register("process_image", lambda ctx: None)
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_failed == 1)
    finally:
        run.stop()
    [process] = [s for s in spans.get_finished_spans() if s.name == "process default"]
    assert process.attributes is not None
    assert process.attributes["orch8.outcome"] == "failed"
    assert process.attributes["error.type"] == "no_handler"
    assert process.status.status_code == StatusCode.ERROR
    task = (("messaging.destination.name", "default"), ("orch8.handler", "resize"))
    duration = points(reader, "orch8.worker.task.duration")
    assert duration == {tuple(sorted((*task, ("orch8.outcome", "failed")))): 1}
    failed = points(reader, "orch8.worker.tasks.failed")
    assert failed == {tuple(sorted((*task, ("error.type", "no_handler")))): 1}


def test_registration_counts_as_a_heartbeat_p_tel_5() -> None:
    """P-TEL-5: a successful registration sets last_heartbeat_at before any worker heartbeat."""

    class Client:
        config = types.SimpleNamespace(base_url="http://orch8.test")

        async def register_worker(self, worker_id: str, **kw: Any) -> Any:
            return types.SimpleNamespace(heartbeat_interval_ms=5000)

    deps = types.SimpleNamespace(
        client=Client(),
        observer=types.SimpleNamespace(
            extra=lambda **kw: {}, error=lambda *a: None, line=lambda *a, **kw: None
        ),
        settings=types.SimpleNamespace(
            worker_id="w1",
            queues=types.SimpleNamespace(registered=["default"]),
            concurrency=1,
            labels={},
            heartbeat_interval_ms=None,
        ),
        stopping=asyncio.Event(),
        last_heartbeat_at=None,
        handler_names=["h"],
        new_backoff=lambda: None,
    )
    before = time.time()
    assert asyncio.run(register_until_ok(deps)) == 5000  # type: ignore[arg-type]
    assert deps.last_heartbeat_at is not None and deps.last_heartbeat_at >= before
