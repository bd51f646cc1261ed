package orch8otel_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/internal/refserver"
	"github.com/orch8/orch8-workers/sdk-go/orch8otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// otelEnv is an in-memory span exporter and metric reader behind one orch8otel.Telemetry.
type otelEnv struct {
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	tel    orch8.Telemetry
}

func newOtelEnv(t *testing.T) *otelEnv {
	t.Helper()
	e := &otelEnv{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	e.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(e.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader))
	t.Cleanup(func() {
		_ = e.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	e.tel = orch8otel.New(orch8otel.WithTracerProvider(e.tp), orch8otel.WithMeterProvider(mp))
	return e
}

// ended are the spans ended so far.
func (e *otelEnv) ended() tracetest.SpanStubs { return e.spans.GetSpans() }

// span waits for the one ended span named name and returns it.
func (e *otelEnv) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	waitFor(t, 10*time.Second, "span "+name, func() bool {
		found = found[:0]
		for _, s := range e.ended() {
			if s.Name == name {
				found = append(found, s)
			}
		}
		return len(found) > 0
	})
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(found), name)
	}
	return found[0]
}

func (e *otelEnv) metrics(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := e.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// waitFor polls cond every 20 ms until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newClient(t *testing.T, s *refserver.Server, tel orch8.Telemetry) *orch8.Client {
	t.Helper()
	c, err := orch8.NewClient(orch8.Config{BaseURL: s.URL, Telemetry: tel})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startWorker runs a worker until the test ends; its logs are printed if the test fails.
func startWorker(t *testing.T, c *orch8.Client, opts orch8.WorkerOptions, handlers map[string]orch8.Handler) *orch8.Worker {
	t.Helper()
	return startWorkerIn(t, context.Background(), c, opts, handlers)
}

// startWorkerIn is startWorker with Run's context derived from parent.
func startWorkerIn(t *testing.T, parent context.Context, c *orch8.Client, opts orch8.WorkerOptions, handlers map[string]orch8.Handler) *orch8.Worker {
	t.Helper()
	logs := &refserver.LogBuffer{}
	opts.WorkerID = "go-" + t.Name()
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w, err := orch8.NewWorker(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range handlers {
		w.Handle(name, h)
	}
	ctx, cancel := context.WithCancel(parent)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Errorf("Run did not return within 60 s")
		}
		if t.Failed() {
			t.Logf("worker log:\n%s", refserver.Tail(logs.String(), 6000))
		}
	})
	return w
}

func waitStatus(t *testing.T, c *orch8.Client, id string, want orch8.TaskStatus) *orch8.TaskRecord {
	t.Helper()
	var rec *orch8.TaskRecord
	waitFor(t, 15*time.Second, "task "+id+" to be "+string(want), func() bool {
		var err error
		rec, err = c.GetTask(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Status == want
	})
	return rec
}
