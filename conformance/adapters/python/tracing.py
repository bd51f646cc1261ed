"""ORCH8_TELEMETRY=1: the Python SDK's OpenTelemetry object for the adapter's worker (P-TEL-3).

An SDK tracer provider of the adapter's own: no exporter, unless OTEL_EXPORTER_OTLP_ENDPOINT
is set (the end-to-end trace test), then OTLP/HTTP protobuf to it. OpenTelemetry is
imported only when telemetry is on, so the other scenarios run exactly as before.
"""

from __future__ import annotations

import os

ENABLED = bool(os.environ.get("ORCH8_TELEMETRY"))


def build():
    """(the SDK's telemetry object, the tracer provider to shut down), or (None, None) when off."""
    if not ENABLED:
        return None, None
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from orch8.otel import OpenTelemetry

    provider = TracerProvider()  # service.name from OTEL_SERVICE_NAME when set
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return OpenTelemetry(tracer_provider=provider), provider


def current_span_ids() -> tuple[str | None, str | None]:
    """(trace id, parent span id) of the span current inside the handler; None when there is none."""
    if not ENABLED:
        return None, None
    from opentelemetry import trace

    span = trace.get_current_span()
    context = span.get_span_context()
    if not context.is_valid:
        return None, None
    parent = getattr(span, "parent", None)  # an SDK span's parent SpanContext (None for a root)
    return format(context.trace_id, "032x"), format(parent.span_id, "016x") if parent else None
