package orch8otel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/orch8otel"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestScheduleToStartIsClaimMinusReadyAt_P_TEL_4 records claim time minus ready_at, and
// nothing when the server sent no ready_at.
func TestScheduleToStartIsClaimMinusReadyAt_P_TEL_4(t *testing.T) {
	env := newOtelEnv(t)
	claimed := time.Now()
	info := orch8.ProcessInfo{TaskID: "task_1", Queue: "q", Handler: "h", WorkerID: "w", Attempt: 1, ClaimedAt: claimed}
	_, span := env.tel.StartProcess(context.Background(), context.Background(), info) // no ready_at
	span.End(orch8.ProcessResult{Outcome: orch8.OutcomeCompleted})
	if got := instrument(t, env.metrics(t), orch8otel.MetricScheduleToStart, "s"); total(got) != 0 {
		t.Fatalf("recorded %v without ready_at", got)
	}
	info.ReadyAt = claimed.Add(-1500 * time.Millisecond)
	_, span = env.tel.StartProcess(context.Background(), context.Background(), info)
	span.End(orch8.ProcessResult{Outcome: orch8.OutcomeCompleted})
	rm := env.metrics(t)
	got := instrument(t, rm, orch8otel.MetricScheduleToStart, "s")
	if total(got, orch8otel.AttrDestinationName.String("q"), orch8otel.AttrHandler.String("h")) != 1 {
		t.Fatalf("schedule_to_start points %v, want one recording for q/h", got)
	}
	if sum := histogramSum(t, env, orch8otel.MetricScheduleToStart); sum < 1.49 || sum > 1.51 {
		t.Fatalf("schedule_to_start recorded %v s, want 1.5", sum)
	}
}

func histogramSum(t *testing.T, env *otelEnv, name string) float64 {
	t.Helper()
	var sum float64
	for _, sm := range env.metrics(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
				for _, p := range h.DataPoints {
					sum += p.Sum
				}
			}
		}
	}
	return sum
}

// fakeEnqueue answers POST /tasks and /tasks/batch like the server and keeps the bodies.
type fakeEnqueue struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func (f *fakeEnqueue) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	task := func(i int) map[string]any {
		return map[string]any{"id": "task_" + string(rune('A'+i)), "handler_name": "h", "queue_name": "default", "status": "pending",
			"params": map[string]any{}, "context": map[string]any{}, "headers": map[string]any{}, "priority": 0, "attempt": 0,
			"max_attempts": 3, "created_at": time.Now().UTC().Format(time.RFC3339Nano), "updated_at": time.Now().UTC().Format(time.RFC3339Nano)}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	if strings.HasSuffix(r.URL.Path, "/batch") {
		tasks, _ := body["tasks"].([]any)
		out := make([]any, len(tasks))
		for i := range tasks {
			out[i] = task(i)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"tasks": out})
		return
	}
	_ = json.NewEncoder(w).Encode(task(0))
}

// TestCallersTraceparentWinsAndBatchIsInjected_P_TEL_1: a caller-set traceparent is sent
// unchanged; every other task of a batch gets the send span's context; the caller's maps
// are not written; a batch span carries messaging.batch.message_count.
func TestCallersTraceparentWinsAndBatchIsInjected_P_TEL_1(t *testing.T) {
	env := newOtelEnv(t)
	fake := &fakeEnqueue{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	c, err := orch8.NewClient(orch8.Config{BaseURL: srv.URL, Telemetry: env.tel})
	if err != nil {
		t.Fatal(err)
	}
	const callers = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	own := map[string]string{"traceparent": callers}
	shared := map[string]string{"tenant": "acme"}
	batch := orch8.NewTaskBatch{Tasks: []orch8.NewTask{
		{HandlerName: "h", Headers: own}, {HandlerName: "h", Headers: shared}, {HandlerName: "h"}}}
	if _, err := c.EnqueueBatch(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if len(shared) != 1 || batch.Tasks[2].Headers != nil {
		t.Fatalf("the caller's headers were written: %v, %v", shared, batch.Tasks[2].Headers)
	}
	send := env.span(t, "send default")
	want := "00-" + send.SpanContext.TraceID().String() + "-" + send.SpanContext.SpanID().String() + "-01"
	tasks := fake.bodies[0]["tasks"].([]any)
	for i, wantTP := range []string{callers, want, want} {
		h, _ := tasks[i].(map[string]any)["headers"].(map[string]any)
		if h["traceparent"] != wantTP {
			t.Errorf("task %d sent traceparent %v, want %s", i, h["traceparent"], wantTP)
		}
	}
	if h := tasks[1].(map[string]any)["headers"].(map[string]any); h["tenant"] != "acme" {
		t.Errorf("task 1 lost its own header: %v", h)
	}
	wantAttrs(t, send, map[string]any{"messaging.batch.message_count": int64(3), "messaging.operation.type": "send"})
	if _, ok := attrs(send)["messaging.message.id"]; ok {
		t.Errorf("a batch span carries messaging.message.id: %v", attrs(send))
	}
}

// TestFailedEnqueueSpanIsError_P_TEL_1: a refused enqueue ends its span with ERROR.
func TestFailedEnqueueSpanIsError_P_TEL_1(t *testing.T) {
	env := newOtelEnv(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"type":"about:blank","title":"bad","status":422,"code":"validation_failed","detail":"no"}`))
	}))
	defer srv.Close()
	c, _ := orch8.NewClient(orch8.Config{BaseURL: srv.URL, Telemetry: env.tel})
	if _, err := c.Enqueue(context.Background(), orch8.NewTask{HandlerName: "h", QueueName: orch8.Ptr("mail")}); err == nil {
		t.Fatal("want an error")
	}
	send := env.span(t, "send mail")
	if send.Status.Code != codes.Error || attrs(send)["error.type"] != "validation_failed" {
		t.Fatalf("status %v attrs %v", send.Status, attrs(send))
	}
}

// TestNewUsesGlobalProviders: without options, spans go to the global tracer provider.
func TestNewUsesGlobalProviders(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	prevMP := otel.GetMeterProvider()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider())
	t.Cleanup(func() { otel.SetTracerProvider(prev); otel.SetMeterProvider(prevMP) })
	tel := orch8otel.New()
	_, span := tel.StartProcess(context.Background(), context.Background(), orch8.ProcessInfo{Queue: "q"})
	span.End(orch8.ProcessResult{Outcome: orch8.OutcomeCompleted})
	if got := exp.GetSpans(); len(got) != 1 || got[0].Name != "process q" || got[0].SpanKind != trace.SpanKindConsumer {
		t.Fatalf("global provider got %v", got)
	}
}

// TestScheduleToStartClampsNegativeToZero_P_TEL_4: a ready_at after the claim time (the
// clocks disagree) records 0, not a negative wait.
func TestScheduleToStartClampsNegativeToZero_P_TEL_4(t *testing.T) {
	env := newOtelEnv(t)
	claimed := time.Now()
	info := orch8.ProcessInfo{TaskID: "task_1", Queue: "q", Handler: "h", WorkerID: "w", Attempt: 1,
		ClaimedAt: claimed, ReadyAt: claimed.Add(2 * time.Second)}
	_, span := env.tel.StartProcess(context.Background(), context.Background(), info)
	span.End(orch8.ProcessResult{Outcome: orch8.OutcomeCompleted})
	if got := instrument(t, env.metrics(t), orch8otel.MetricScheduleToStart, "s"); total(got) != 1 {
		t.Fatalf("schedule_to_start points %v, want one", got)
	}
	if sum := histogramSum(t, env, orch8otel.MetricScheduleToStart); sum != 0 {
		t.Fatalf("schedule_to_start recorded %v s for a ready_at after the claim, want 0", sum)
	}
}

// TestReceiveSpanAttributes_P_TEL_3: the CLIENT span of a poll starts when the poll was sent
// and carries messaging.system, messaging.operation.type, messaging.destination.name (one
// queue only), messaging.batch.message_count and orch8.worker.id; several queues: "receive".
func TestReceiveSpanAttributes_P_TEL_3(t *testing.T) {
	env := newOtelEnv(t)
	began := time.Now().Add(-time.Second)
	env.tel.Receive(context.Background(), orch8.ReceiveInfo{Queue: "q", Count: 3, WorkerID: "w", Began: began})
	env.tel.Receive(context.Background(), orch8.ReceiveInfo{Count: 2, WorkerID: "w", Began: began})
	one, several := env.span(t, "receive q"), env.span(t, "receive")
	attrs := func(s tracetest.SpanStub) map[string]any {
		m := map[string]any{}
		for _, kv := range s.Attributes {
			m[string(kv.Key)] = kv.Value.AsInterface()
		}
		return m
	}
	want := map[string]any{"messaging.system": "orch8", "messaging.operation.type": "receive",
		"messaging.destination.name": "q", "messaging.batch.message_count": int64(3), "orch8.worker.id": "w"}
	if got := attrs(one); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("receive q attributes %v, want %v", got, want)
	}
	delete(want, "messaging.destination.name")
	want["messaging.batch.message_count"] = int64(2)
	if got := attrs(several); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("receive (several queues) attributes %v, want %v", got, want)
	}
	if one.SpanKind != trace.SpanKindClient || !one.StartTime.Equal(began) {
		t.Errorf("receive span kind %v start %v, want CLIENT from %v", one.SpanKind, one.StartTime, began)
	}
}
