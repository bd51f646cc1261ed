"""Telemetry through the real server (docs/protocol.md section 15, P-TEL-1/3/4).

In-memory span exporter and metric reader of the OpenTelemetry SDK: one trace from a
producer's enqueue, through the server (the task's stored headers), to the worker's process
span and the handler's own spans.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from orch8 import Orch8Client, PermanentError, TaskContext
from orch8.otel import OpenTelemetry

from .conftest import Server, make_worker, wait_until


@dataclass
class Otel:
    telemetry: OpenTelemetry
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    tracer_provider: TracerProvider

    def finished(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name == name]


@pytest.fixture
def otel() -> Iterator[Otel]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry = OpenTelemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
    yield Otel(telemetry, spans, reader, tracer_provider)
    tracer_provider.shutdown()
    meter_provider.shutdown()


def traceparent(span: ReadableSpan) -> str:
    ctx = span.get_span_context()
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def process_span_of(otel: Otel, task_id: str) -> ReadableSpan:
    found = [
        s
        for s in otel.finished("process default")
        if (s.attributes or {}).get("messaging.message.id") == task_id
    ]
    assert len(found) == 1, f"one process span for {task_id}, got {len(found)}"
    return found[0]


def test_one_trace_from_enqueue_through_the_server_to_the_handler_p_tel_1_p_tel_3(
    server: Server, otel: Otel, run_worker: Any
) -> None:
    """P-TEL-1/P-TEL-3: send span -> stored traceparent -> process span -> handler's span."""
    tracer = otel.tracer_provider.get_tracer("test")
    worker, _ = make_worker(server, worker_id="w-trace", telemetry=otel.telemetry)
    seen: dict[str, Any] = {}

    @worker.handler("traced")
    def traced(ctx: TaskContext) -> str:
        seen["headers"] = dict(ctx.headers)
        with tracer.start_as_current_span("inside the handler"):
            pass
        return "ok"

    @worker.handler("broken")
    async def broken(ctx: TaskContext) -> None:
        raise PermanentError("bad input", code="bad_input")

    with Orch8Client(server.url, telemetry=otel.telemetry) as client:
        with tracer.start_as_current_span("caller") as caller:
            task = client.enqueue("traced", params={"n": 1})
            failing = client.enqueue("broken")
        run_worker(worker)
        wait_until(lambda: worker.stats().tasks_completed + worker.stats().tasks_failed == 2)
        stored = client.get_task(task.id).headers.to_dict()

    sends = otel.finished("send default")
    assert len(sends) == 2
    send = next(s for s in sends if s.attributes["messaging.message.id"] == task.id)
    assert send.kind == SpanKind.PRODUCER
    assert send.parent is not None and send.parent.span_id == caller.get_span_context().span_id
    assert dict(send.attributes or {}) == {
        "messaging.system": "orch8",
        "messaging.operation.type": "send",
        "messaging.destination.name": "default",
        "messaging.message.id": task.id,
    }
    # Through the server: the stored headers and the handler's carry the send span's context.
    assert stored["traceparent"] == traceparent(send)
    assert seen["headers"]["traceparent"] == traceparent(send)

    process = process_span_of(otel, task.id)
    assert process.kind == SpanKind.CONSUMER
    assert process.context.trace_id == caller.get_span_context().trace_id  # ONE trace
    assert process.parent is not None and process.parent.span_id == send.context.span_id
    receives = {s.context.span_id: s for s in otel.finished("receive default")}
    assert receives, "a receive span for the poll that claimed the tasks"
    assert [link.context.span_id in receives for link in process.links] == [True]
    receive = receives[process.links[0].context.span_id]
    assert receive.kind == SpanKind.CLIENT
    assert receive.attributes["messaging.operation.type"] == "receive"
    assert dict(process.attributes or {}) == {
        "messaging.system": "orch8",
        "messaging.operation.type": "process",
        "messaging.destination.name": "default",
        "messaging.message.id": task.id,
        "orch8.handler": "traced",
        "orch8.attempt": 1,
        "orch8.worker.id": "w-trace",
        "orch8.outcome": "completed",
    }
    assert process.status.status_code == StatusCode.UNSET

    inside = otel.finished("inside the handler")
    assert len(inside) == 1 and inside[0].parent is not None
    assert inside[0].parent.span_id == process.context.span_id  # the handler's spans nest

    failed = process_span_of(otel, failing.id)
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes["orch8.outcome"] == "failed"
    assert failed.attributes["error.type"] == "bad_input"
    assert failed.context.trace_id == caller.get_span_context().trace_id


def test_batch_send_and_the_callers_traceparent_wins_p_tel_1(server: Server, otel: Otel) -> None:
    """P-TEL-1: one span for a batch (message count); a traceparent the caller set stays."""
    mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with Orch8Client(server.url, telemetry=otel.telemetry) as client:
        tasks = client.enqueue_batch(
            [
                {"handler_name": "h", "queue_name": "q1"},
                {"handler_name": "h", "queue_name": "q1", "headers": {"traceparent": mine}},
            ]
        )
        stored = [client.get_task(t.id).headers.to_dict() for t in tasks]
    [send] = otel.spans.get_finished_spans()
    assert send.name == "send q1" and send.kind == SpanKind.PRODUCER
    assert send.parent is None  # no current span: a new root
    assert send.attributes["messaging.batch.message_count"] == 2
    assert "messaging.message.id" not in (send.attributes or {})
    assert stored[0]["traceparent"] == traceparent(send)
    assert stored[1] == {"traceparent": mine}


def test_a_task_without_traceparent_gets_a_root_process_span_p_tel_3(
    server: Server, client: Orch8Client, otel: Otel, run_worker: Any
) -> None:
    """P-TEL-3: no traceparent in the headers: the process span is a new root."""
    worker, _ = make_worker(server, telemetry=otel.telemetry)
    worker.register("plain", lambda ctx: None)
    task = client.enqueue("plain")  # a client without telemetry adds no headers
    run_worker(worker)
    wait_until(lambda: worker.stats().tasks_completed == 1)
    assert client.get_task(task.id).headers.to_dict() == {}
    process = process_span_of(otel, task.id)
    assert process.parent is None


def metric_points(otel: Otel) -> dict[str, list[Any]]:
    """Every data point by instrument name, from the meter `orch8`."""
    out: dict[str, list[Any]] = {}
    data = otel.metrics.get_metrics_data()
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "orch8"
            for metric in scope.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


def total(points: list[Any], **attrs: Any) -> float:
    """Sum (counters) or count (histograms) of the points whose attributes include `attrs`."""
    keyed = {k.replace("__", "."): v for k, v in attrs.items()}
    hits = [p for p in points if all((p.attributes or {}).get(k) == v for k, v in keyed.items())]
    return sum(getattr(p, "count", None) or getattr(p, "value", 0) for p in hits)


def test_worker_metrics_move_by_exactly_the_completions_and_failures_p_tel_4(
    server: Server, client: Orch8Client, otel: Otel, run_worker: Any
) -> None:
    """P-TEL-4: N completions and M failures move each instrument by N and M."""
    n, m = 5, 3
    worker, _ = make_worker(server, worker_id="w-metrics", concurrency=4, telemetry=otel.telemetry)
    release = threading.Event()

    @worker.handler("ok")
    def ok(ctx: TaskContext) -> None:
        release.wait(10)

    @worker.handler("bad")
    def bad(ctx: TaskContext) -> None:
        raise PermanentError("no", code="bad_input" if ctx.params["n"] % 2 else "too_big")

    for i in range(n):
        client.enqueue("ok", params={"n": i})
    for i in range(m):
        client.enqueue("bad", params={"n": i})
    rw = run_worker(worker)
    wait_until(lambda: worker.stats().in_flight == 4)
    held = metric_points(otel)
    assert total(held["orch8.worker.tasks.in_flight"]) == 4
    assert total(held["orch8.worker.slots.free"]) == 0
    release.set()
    wait_until(lambda: worker.stats().tasks_completed == n and worker.stats().tasks_failed == m)
    wait_until(
        lambda: total(metric_points(otel).get("orch8.worker.heartbeats", []), orch8__outcome="ok")
    )
    rw.stop_and_join()

    points = metric_points(otel)
    q = {"messaging__destination__name": "default"}
    assert total(points["orch8.worker.tasks.completed"], **q, orch8__handler="ok") == n
    assert "orch8.worker.tasks.failed" in points
    failed = points["orch8.worker.tasks.failed"]
    assert total(failed, **q, orch8__handler="bad") == m
    assert total(failed, error__type="bad_input") == 1  # n = 1
    assert total(failed, error__type="too_big") == 2  # n = 0, 2
    duration = points["orch8.worker.task.duration"]
    assert total(duration, orch8__handler="ok", orch8__outcome="completed") == n
    assert total(duration, orch8__handler="bad", orch8__outcome="failed") == m
    assert total(points["orch8.worker.task.schedule_to_start"], **q) == n + m
    assert all(p.min >= 0 for p in points["orch8.worker.task.schedule_to_start"])
    polls = points["orch8.worker.polls"]
    assert total(polls, orch8__outcome="claimed") >= 2  # 4 slots for 8 tasks
    # Every poll answered or failed; the one shutdown aborted is not an answer.
    assert worker.stats().polls - 1 <= total(polls) <= worker.stats().polls
    assert total(points["orch8.worker.heartbeats"], orch8__outcome="ok") >= 1
    assert "orch8.worker.lease_losses" not in points  # nothing was lost
    assert total(points["orch8.worker.tasks.in_flight"]) == 0
    assert total(points["orch8.worker.slots.free"]) == 4


NO_OTEL_SCRIPT = """
import sys, threading
from orch8 import Orch8Client, Worker
url = sys.argv[1]
with Orch8Client(url) as client:
    task = client.enqueue("plain", headers={"k": "v"})
    worker = Worker(base_url=url, handle_signals=False, wait_ms=200)
    done = threading.Event()
    worker.register("plain", lambda ctx: done.set())
    worker.on_task_complete(lambda event: worker.stop())
    worker.run()
    assert client.get_task(task.id).status == "completed"
print(sorted(m for m in sys.modules if m.startswith("opentelemetry") or m == "orch8.otel"))
"""


def test_without_telemetry_the_core_imports_no_opentelemetry(server: Server) -> None:
    """Section 15: no telemetry object, no OpenTelemetry module loaded (enqueue and a run)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", NO_OTEL_SCRIPT, server.url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
