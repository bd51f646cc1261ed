//go:build !orch8before

package main

import (
	"os"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/orch8otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// config gives the client (and so its Worker) orch8otel's telemetry when ORCH8_TELEMETRY=1
// (issue 18), on the OpenTelemetry SDK's own providers: spans batched into an exporter that
// drops them, metrics aggregated by a reader that is never read. That measures the SDK's
// instrumentation cost, not a network exporter's.
func config(url string) orch8.Config {
	cfg := orch8.Config{BaseURL: url}
	if os.Getenv("ORCH8_TELEMETRY") != "1" {
		return cfg
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	cfg.Telemetry = orch8otel.New(orch8otel.WithTracerProvider(tp), orch8otel.WithMeterProvider(mp))
	return cfg
}
