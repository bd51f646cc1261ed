"""orch8.otel outcomes the real server rarely shows on demand (P-TEL-3, P-TEL-4), no network.

A lease lost while the handler runs, failed polls and heartbeats, a refused enqueue.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from orch8 import AsyncOrch8Client, Orch8Client, ValidationError
from orch8.otel import OpenTelemetry

from .conftest import BASE, problem, task
from .fake_server import FakeServer, Running, wait_until


@pytest.fixture
def otel() -> Iterator[tuple[OpenTelemetry, InMemorySpanExporter, InMemoryMetricReader]]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield OpenTelemetry(tracer_provider, meter_provider), spans, reader
    tracer_provider.shutdown()
    meter_provider.shutdown()


def points(reader: InMemoryMetricReader, name: str) -> dict[tuple[Any, ...], float]:
    """{sorted attribute items: value or count} of one instrument."""
    out: dict[tuple[Any, ...], float] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else []:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == name:
                    for p in metric.data.data_points:
                        key = tuple(sorted((p.attributes or {}).items()))
                        out[key] = getattr(p, "count", None) or getattr(p, "value", 0)
    return out


def test_a_lease_lost_while_the_handler_runs_is_a_lease_loss_p_tel_3_p_tel_4(otel: Any) -> None:
    telemetry, spans, reader = otel
    server = FakeServer()
    server.add("t1")
    lost = [False]

    @server.route("POST", "/workers/w/heartbeat")
    def heartbeat(request: httpx.Request, body: Any) -> httpx.Response:
        if not lost[0]:  # the first heartbeat fails: counted as an error
            lost[0] = True
            return httpx.Response(400, json=problem(400, "bad_request"))
        tasks = [
            {"task_id": t, "lease_lost": True, "cancel_requested": False, "lease_expires_at": None}
            for t in body["active_task_ids"]
        ]
        return httpx.Response(
            200, json={"directive": "running", "heartbeat_interval_ms": 20, "tasks": tasks}
        )

    polls = [0]

    @server.route("POST", "/workers/tasks/poll/batch")
    def poll(request: httpx.Request, body: Any) -> httpx.Response:
        polls[0] += 1
        if polls[0] == 1:
            return httpx.Response(400, json=problem(400, "bad_request"))
        return server.default("POST", "/workers/tasks/poll/batch", body)

    worker = server.worker(heartbeat_interval_ms=20, telemetry=telemetry)
    worker.register("process_image", lambda ctx: ctx.cancelled.wait(10))
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().tasks_lease_lost == 1)
    finally:
        run.stop()
    [process] = [s for s in spans.get_finished_spans() if s.name == "process default"]
    assert process.attributes["orch8.outcome"] == "lease_lost"
    assert process.status.status_code == StatusCode.UNSET
    task = (("messaging.destination.name", "default"), ("orch8.handler", "process_image"))
    assert points(reader, "orch8.worker.lease_losses") == {task: 1}
    assert points(reader, "orch8.worker.tasks.completed") == {}
    duration = points(reader, "orch8.worker.task.duration")
    assert duration == {tuple(sorted((*task, ("orch8.outcome", "lease_lost")))): 1}
    assert points(reader, "orch8.worker.polls")[(("orch8.outcome", "error"),)] == 1
    assert points(reader, "orch8.worker.polls")[(("orch8.outcome", "claimed"),)] == 1
    assert points(reader, "orch8.worker.heartbeats")[(("orch8.outcome", "error"),)] == 1
    assert points(reader, "orch8.worker.tasks.in_flight") == {(): 0}


def test_a_refused_enqueue_ends_its_send_span_with_error_p_tel_1(otel: Any) -> None:
    telemetry, spans, _ = otel
    sent: list[bytes] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(422, json=problem(422, "validation_error"))

    with (
        Orch8Client(BASE, transport=httpx.MockTransport(refuse), telemetry=telemetry) as client,
        pytest.raises(ValidationError),
    ):
        client.enqueue("h", queue_name="q")
    [send] = spans.get_finished_spans()
    assert send.name == "send q" and send.status.status_code == StatusCode.ERROR
    assert b'"traceparent"' in sent[0]


def test_the_async_client_sends_in_a_child_span_of_the_callers_p_tel_1(otel: Any) -> None:
    telemetry, spans, _ = otel
    bodies: list[Any] = []

    def created(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(201, json=task("t7"))

    async def main() -> None:
        tracer = telemetry._tracer  # the same provider, so the caller's span is recorded too
        transport = httpx.MockTransport(created)
        async with AsyncOrch8Client(BASE, transport=transport, telemetry=telemetry) as client:
            with tracer.start_as_current_span("caller"):
                await client.enqueue("h", headers={"k": "v"})

    asyncio.run(main())
    send, caller = spans.get_finished_spans()
    assert send.name == "send default" and send.attributes["messaging.message.id"] == "t7"
    assert send.parent is not None and send.parent.span_id == caller.context.span_id
    ctx = send.get_span_context()
    assert bodies[0]["headers"] == {
        "k": "v",
        "traceparent": f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}",
    }
