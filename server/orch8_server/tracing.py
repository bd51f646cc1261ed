"""Server spans of tasks that carry trace context (P-TEL-2), with the OpenTelemetry SDK.

Imported only when the server is started with an OTLP endpoint (`--otlp-endpoint` /
OTEL_EXPORTER_OTLP_ENDPOINT) or a test injects a span exporter: without either, the
engine holds no `ServerSpans` and never imports OpenTelemetry (the `otel` extra).

Spans are recorded after the transaction committed (the lifecycle's post-commit effects),
never for work that may still roll back. Their start is the instant the server began the
operation (the `now` it already computed), their end the moment of recording. Each is a
child of the task's `traceparent` (and `tracestate`) context; a task without one gets
no span. Headers are read as stored, never rewritten.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from orch8_server.config import Settings
from orch8_server.storage.base import Row

log = logging.getLogger("orch8.tracing")

_PROPAGATOR = TraceContextTextMapPropagator()
SCOPE = "orch8-server"


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of a base endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT means it."""
    return endpoint.rstrip("/") + "/v1/traces"


def _headers(value: Any) -> Mapping[str, Any] | None:
    """The task's headers: a dict (parsed rows) or the stored JSON text (claims and fast
    completions keep it unparsed; parsed here only when it may hold a traceparent)."""
    if isinstance(value, dict):
        return value if "traceparent" in value else None
    if isinstance(value, str) and "traceparent" in value:
        parsed = orjson.loads(value)
        return parsed if isinstance(parsed, dict) else None
    return None


def _parent(headers: Mapping[str, Any]) -> Context | None:
    """The task's trace context (W3C traceparent/tracestate, P-TEL-1); None if invalid."""
    carrier = {k: v for k in ("traceparent", "tracestate") if isinstance(v := headers.get(k), str)}
    ctx = _PROPAGATOR.extract(carrier)
    return ctx if ctx else None


class ServerSpans:
    """Records `enqueue`, `claim`, `complete` and `fail` spans (P-TEL-2)."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer(SCOPE)

    @classmethod
    def create(cls, settings: Settings, exporter: SpanExporter | None = None) -> ServerSpans:
        """Spans exported in batches to `exporter`, or by OTLP/HTTP (protobuf) to the
        settings' endpoint."""
        if exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            assert settings.otlp_endpoint is not None
            exporter = OTLPSpanExporter(endpoint=traces_url(settings.otlp_endpoint))
            log.info(
                "exporting server spans (P-TEL-2)",
                extra={"endpoint": traces_url(settings.otlp_endpoint)},
            )
        resource = Resource.create({"service.name": settings.otel_service_name})
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(BatchSpanProcessor(exporter))
        return cls(provider)

    def flush(self) -> None:
        self.provider.force_flush()

    def shutdown(self) -> None:
        """Export what is buffered, then stop (the server is stopping)."""
        self.provider.shutdown()

    def _record(
        self,
        operation: str,
        rows: Iterable[Row | None],
        start_ms: int,
        headers_key: str = "headers",
        with_worker: bool = True,
    ) -> None:
        end = time.time_ns()
        start = start_ms * 1_000_000
        for row in rows:
            if row is None:
                continue
            headers = _headers(row.get(headers_key))
            if headers is None:
                continue
            parent = _parent(headers)
            if parent is None:
                continue  # a malformed traceparent: nothing to be a child of
            attributes: dict[str, Any] = {
                "messaging.system": "orch8",
                "messaging.destination.name": row["queue_name"],
                "messaging.message.id": row["id"],
                "orch8.handler": row["handler_name"],
                "orch8.attempt": row["attempt"],
            }
            if with_worker and row.get("worker_id") is not None:
                attributes["orch8.worker.id"] = row["worker_id"]
            span = self.tracer.start_span(
                f"{operation} {row['queue_name']}",
                context=parent,
                kind=SpanKind.INTERNAL,
                attributes=attributes,
                start_time=min(start, end),
            )
            if operation == "fail":
                error = row.get("error") or {}
                span.set_attribute(
                    "orch8.outcome", "failed" if row["status"] == "failed" else "requeued"
                )
                if error.get("code"):
                    span.set_attribute("error.type", error["code"])
                span.set_status(Status(StatusCode.ERROR, error.get("message")))
            span.end(end_time=end)

    def enqueued(self, rows: Iterable[Row], start_ms: int) -> None:
        """Tasks created (not idempotent repeats): `enqueue <queue>`."""
        self._record("enqueue", rows, start_ms, with_worker=False)

    def claimed(self, rows: Iterable[Row], start_ms: int) -> None:
        """Attempts claimed: `claim <queue>` (headers as stored text, see storage)."""
        self._record("claim", rows, start_ms, headers_key="headers_json")

    def completed(self, rows: Iterable[Row | None], start_ms: int) -> None:
        """Results stored: `complete <queue>`."""
        self._record("complete", rows, start_ms)

    def failed(self, rows: Iterable[Row | None], start_ms: int) -> None:
        """Failures stored (final or re-queued): `fail <queue>`, status ERROR."""
        self._record("fail", rows, start_ms)
