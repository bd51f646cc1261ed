package main

// ORCH8_TELEMETRY=1: the Go SDK's telemetry (orch8otel) for the adapter's worker (P-TEL-3).
// A tracer provider of the adapter's own: no exporter, unless OTEL_EXPORTER_OTLP_ENDPOINT is
// set (the end-to-end trace test), then OTLP/HTTP protobuf to it; service.name comes from
// OTEL_SERVICE_NAME (the SDK's default resource reads it).

import (
	"context"
	"fmt"
	"os"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/orch8otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

var tracingOn = os.Getenv("ORCH8_TELEMETRY") != ""

// buildTelemetry returns the worker's Telemetry (nil when off) and the function that
// flushes the spans still batched before the process exits.
func buildTelemetry() (orch8.Telemetry, func()) {
	if !tracingOn {
		return nil, func() {}
	}
	var opts []sdktrace.TracerProviderOption
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		exporter, err := otlptracehttp.New(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, "OTLP trace exporter:", err)
			os.Exit(2)
		}
		opts = append(opts, sdktrace.WithBatcher(exporter))
	}
	provider := sdktrace.NewTracerProvider(opts...)
	return orch8otel.New(orch8otel.WithTracerProvider(provider)), func() { _ = provider.Shutdown(context.Background()) }
}

// currentSpanIDs gives the trace id and parent span id of the span current in the
// handler's context; nils when there is none (a root span has no parent).
func currentSpanIDs(ctx context.Context) (traceID, parentSpanID any) {
	span := trace.SpanFromContext(ctx)
	ids := span.SpanContext()
	if !ids.IsValid() {
		return nil, nil
	}
	if ro, ok := span.(sdktrace.ReadOnlySpan); ok && ro.Parent().IsValid() {
		parentSpanID = ro.Parent().SpanID().String()
	}
	return ids.TraceID().String(), parentSpanID
}

// echoTrace returns the trace context as received (P-TEL-1) and the current span's ids (P-TEL-3).
func echoTrace(ctx context.Context, t *orch8.Task) (any, error) {
	traceID, parent := currentSpanIDs(ctx)
	var traceparent, tracestate any
	if v, ok := t.Headers["traceparent"]; ok {
		traceparent = v
	}
	if v, ok := t.Headers["tracestate"]; ok {
		tracestate = v
	}
	return output(t, map[string]any{
		"traceparent": traceparent, "tracestate": tracestate, "trace_id": traceID, "parent_span_id": parent,
	}), nil
}
