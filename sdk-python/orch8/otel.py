"""OpenTelemetry for Orch8 clients and workers (docs/protocol.md section 15, P-TEL-1/3/4).

Install the extra (`pip install "orch8[otel]"`) and pass one object to the client and the
worker::

    from orch8.otel import OpenTelemetry

    telemetry = OpenTelemetry()  # the global tracer and meter providers
    client = Orch8Client(telemetry=telemetry)
    worker = Worker(telemetry=telemetry, queue_name="default")

Only this module imports `opentelemetry`; `import orch8` never does.
"""

from __future__ import annotations

import contextlib
import datetime
import time
from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any

try:
    from opentelemetry import context as otel_context
    from opentelemetry import metrics, trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError('orch8.otel needs the OpenTelemetry API: pip install "orch8[otel]"') from exc

from ._generated.models import ClaimedTask
from ._version import __version__

SYSTEM = "orch8"
INSTRUMENTATION = "orch8"  # P-TEL-4: the meter (and tracer) name

# P-TEL-1 / P-TEL-3 attribute names (OpenTelemetry messaging conventions where they apply).
A_SYSTEM = "messaging.system"
A_OPERATION = "messaging.operation.type"
A_QUEUE = "messaging.destination.name"
A_MESSAGE_ID = "messaging.message.id"
A_BATCH_COUNT = "messaging.batch.message_count"
A_HANDLER = "orch8.handler"
A_ATTEMPT = "orch8.attempt"
A_WORKER = "orch8.worker.id"
A_OUTCOME = "orch8.outcome"
A_ERROR_TYPE = "error.type"

# W3C trace context only (P-TEL-1: `traceparent` and `tracestate`), whatever the global
# propagator is configured to add.
_W3C = TraceContextTextMapPropagator()


def _common_queue(queues: Sequence[str]) -> str | None:
    """The one queue all items share; None for a mix (the span is then named plainly)."""
    unique = set(queues)
    return unique.pop() if len(unique) == 1 else None


class _Instruments:
    """P-TEL-4: the worker instruments on the meter `orch8`."""

    def __init__(self, meter: metrics.Meter) -> None:
        self.duration = meter.create_histogram(
            "orch8.worker.task.duration", unit="s", description="Handler run time"
        )
        self.schedule_to_start = meter.create_histogram(
            "orch8.worker.task.schedule_to_start",
            unit="s",
            description="Claim time minus the time the attempt became claimable (ready_at)",
        )
        self.completed = meter.create_counter(
            "orch8.worker.tasks.completed", unit="{task}", description="Completions acknowledged"
        )
        self.failed = meter.create_counter(
            "orch8.worker.tasks.failed", unit="{task}", description="Failures acknowledged"
        )
        self.polls = meter.create_counter(
            "orch8.worker.polls", unit="{poll}", description="Polls answered or failed"
        )
        self.heartbeats = meter.create_counter(
            "orch8.worker.heartbeats", unit="{heartbeat}", description="Worker heartbeats"
        )
        self.lease_losses = meter.create_counter(
            "orch8.worker.lease_losses", unit="{task}", description="Tasks given up as lease lost"
        )
        self.in_flight = meter.create_up_down_counter(
            "orch8.worker.tasks.in_flight", unit="{task}", description="Tasks held now"
        )
        self.free_slots = meter.create_gauge(
            "orch8.worker.slots.free", unit="{slot}", description="Concurrency minus in flight"
        )


class _SendScope:
    def __init__(self, span: trace.Span, batch: bool) -> None:
        self._span = span
        self._batch = batch

    def sent(self, task_ids: Sequence[str]) -> None:
        if not self._batch and task_ids:
            self._span.set_attribute(A_MESSAGE_ID, task_ids[0])


class _TaskTelemetry:
    """One attempt's process span (P-TEL-3) and its metrics (P-TEL-4)."""

    def __init__(self, span: trace.Span, metric_attrs: dict[str, str], ins: _Instruments) -> None:
        self._span = span
        self._attrs = metric_attrs
        self._ins = ins

    @contextlib.contextmanager
    def current(self) -> Iterator[object]:
        token = otel_context.attach(trace.set_span_in_context(self._span))
        try:
            yield self._span
        finally:
            otel_context.detach(token)

    def ended(self, outcome: str, code: str | None, handler_s: float | None) -> None:
        span = self._span
        span.set_attribute(A_OUTCOME, outcome)
        if outcome == "failed":
            span.set_attribute(A_ERROR_TYPE, code or "unhandled_error")
            span.set_status(trace.StatusCode.ERROR, code)
            self._ins.failed.add(1, {**self._attrs, A_ERROR_TYPE: code or "unhandled_error"})
        elif outcome == "completed":
            self._ins.completed.add(1, self._attrs)
        elif outcome == "lease_lost":
            self._ins.lease_losses.add(1, self._attrs)
        if handler_s is not None:
            self._ins.duration.record(handler_s, {**self._attrs, A_OUTCOME: outcome})
        span.end()


class _WorkerTelemetry:
    """The spans and instruments of one worker (P-TEL-3, P-TEL-4)."""

    def __init__(self, tracer: trace.Tracer, ins: _Instruments, worker_id: str) -> None:
        self._tracer = tracer
        self._ins = ins
        self._worker_id = worker_id

    def polled(self, started_ns: int, tasks: Sequence[ClaimedTask] | None) -> object:
        if tasks is None:
            self._ins.polls.add(1, {A_OUTCOME: "error"})
            return None
        if not tasks:
            self._ins.polls.add(1, {A_OUTCOME: "empty"})
            return None
        self._ins.polls.add(1, {A_OUTCOME: "claimed"})
        # P-TEL-3: only a poll that claimed tasks gets a span; it starts when the poll was
        # sent, so empty long-polls leave no trace.
        queue = _common_queue([t.queue_name for t in tasks])
        attrs: dict[str, Any] = {
            A_SYSTEM: SYSTEM,
            A_OPERATION: "receive",
            A_WORKER: self._worker_id,
            A_BATCH_COUNT: len(tasks),
        }
        if queue is not None:
            attrs[A_QUEUE] = queue
        span = self._tracer.start_span(
            f"receive {queue}" if queue else "receive",
            kind=trace.SpanKind.CLIENT,
            attributes=attrs,
            start_time=started_ns,
        )
        span.end()
        return span.get_span_context()

    def task_started(self, task: ClaimedTask, poll: object) -> _TaskTelemetry:
        headers = task.headers.to_dict()
        parent = _W3C.extract({k.lower(): v for k, v in headers.items()})
        links = [trace.Link(poll)] if isinstance(poll, trace.SpanContext) else []
        span = self._tracer.start_span(
            f"process {task.queue_name}",
            context=parent,  # no traceparent: an empty context, so a new root
            kind=trace.SpanKind.CONSUMER,
            links=links,
            attributes={
                A_SYSTEM: SYSTEM,
                A_OPERATION: "process",
                A_QUEUE: task.queue_name,
                A_MESSAGE_ID: task.id,
                A_HANDLER: task.handler_name,
                A_ATTEMPT: task.attempt,
                A_WORKER: self._worker_id,
            },
        )
        metric_attrs = {A_QUEUE: task.queue_name, A_HANDLER: task.handler_name}
        ready_at = task.ready_at
        if isinstance(ready_at, datetime.datetime):
            wait_s = time.time() - ready_at.timestamp()
            self._ins.schedule_to_start.record(max(0.0, wait_s), metric_attrs)
        return _TaskTelemetry(span, metric_attrs, self._ins)

    def heartbeat(self, ok: bool) -> None:
        self._ins.heartbeats.add(1, {A_OUTCOME: "ok" if ok else "error"})

    def held(self, delta: int, free: int) -> None:
        self._ins.in_flight.add(delta)
        self._ins.free_slots.set(free)


class OpenTelemetry:
    """Spans and metrics through the OpenTelemetry API (docs/protocol.md section 15).

    Uses the global tracer and meter providers unless given its own. Pass the same object
    as `telemetry=` to `Orch8Client`, `AsyncOrch8Client` and `Worker`.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        self._tracer = trace.get_tracer(
            INSTRUMENTATION, __version__, tracer_provider=tracer_provider
        )
        meter = metrics.get_meter(INSTRUMENTATION, __version__, meter_provider=meter_provider)
        self._instruments = _Instruments(meter)

    @contextlib.contextmanager
    def send(self, tasks: Sequence[MutableMapping[str, Any]], batch: bool) -> Iterator[_SendScope]:
        """P-TEL-1: the producer span `send <queue>`, injected into each task's headers."""
        queue = _common_queue([str(t.get("queue_name") or "default") for t in tasks])
        attrs: dict[str, Any] = {A_SYSTEM: SYSTEM, A_OPERATION: "send"}
        if queue is not None:
            attrs[A_QUEUE] = queue
        if batch:
            attrs[A_BATCH_COUNT] = len(tasks)
        name = f"send {queue}" if queue else "send"
        with self._tracer.start_as_current_span(
            name, kind=trace.SpanKind.PRODUCER, attributes=attrs
        ) as span:
            for task in tasks:
                headers = task.get("headers")
                if not isinstance(headers, dict):
                    headers = task["headers"] = {}
                if not any(k.lower() == "traceparent" for k in headers):  # the caller's wins
                    _W3C.inject(headers)
            yield _SendScope(span, batch)

    def worker(self, worker_id: str, concurrency: int) -> _WorkerTelemetry:
        """The worker side; the `Worker` calls it once per run."""
        self._instruments.free_slots.set(concurrency)
        return _WorkerTelemetry(self._tracer, self._instruments, worker_id)
