package orch8otel_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/internal/refserver"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func attrs(s tracetest.SpanStub) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]any) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %#v, want %#v (all: %v)", s.Name, k, got[k], v, got)
		}
	}
}

// handlerSeen is what a handler saw of its trace context.
type handlerSeen struct {
	traceparent string
	current     trace.SpanContext
}

// TestOneTraceFromEnqueueToHandler_P_TEL_1_P_TEL_3: a producer enqueues inside a parent
// span; through the task's headers and the real server, the worker's process span is the
// child of the send span, links to the receive span, and is current for the handler.
func TestOneTraceFromEnqueueToHandler_P_TEL_1_P_TEL_3(t *testing.T) {
	t.Parallel()
	srv := refserver.Start(t)
	env := newOtelEnv(t)
	c := newClient(t, srv, env.tel)
	seen := make(chan handlerSeen, 1)
	startWorker(t, c, orch8.WorkerOptions{Telemetry: env.tel}, map[string]orch8.Handler{
		"traced": func(ctx context.Context, task *orch8.Task) (any, error) {
			_, inner := env.tp.Tracer("handler").Start(ctx, "inside handler")
			inner.End()
			seen <- handlerSeen{traceparent: task.Headers["traceparent"], current: trace.SpanContextFromContext(ctx)}
			return map[string]any{"ok": true}, nil
		},
	})

	ctx, parent := env.tp.Tracer("producer").Start(context.Background(), "producer request")
	rec, err := c.Enqueue(ctx, orch8.NewTask{HandlerName: "traced", Headers: map[string]string{"tenant": "acme"}})
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, rec.ID, orch8.StatusCompleted)
	h := <-seen

	send := env.span(t, "send default")
	receive := env.span(t, "receive default")
	process := env.span(t, "process default")
	inner := env.span(t, "inside handler")
	traceID := parent.SpanContext().TraceID()

	// P-TEL-1: the send span is a PRODUCER child of the caller's span, and its context
	// travelled in the task's headers, stored by the server as sent.
	if send.SpanKind != trace.SpanKindProducer || send.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("send span: kind %v parent %v, want PRODUCER child of %v", send.SpanKind, send.Parent.SpanID(), parent.SpanContext().SpanID())
	}
	wantAttrs(t, send, map[string]any{"messaging.system": "orch8", "messaging.operation.type": "send",
		"messaging.destination.name": "default", "messaging.message.id": rec.ID})
	wantTraceparent := fmt.Sprintf("00-%s-%s-01", traceID, send.SpanContext.SpanID())
	if h.traceparent != wantTraceparent {
		t.Errorf("handler saw traceparent %q, want %q", h.traceparent, wantTraceparent)
	}
	stored, err := c.GetTask(context.Background(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Headers["traceparent"] != wantTraceparent || stored.Headers["tenant"] != "acme" {
		t.Errorf("stored headers %v, want traceparent %q and tenant acme", stored.Headers, wantTraceparent)
	}

	// P-TEL-3: process is a CONSUMER child of the send span (remote, through the server),
	// in the producer's trace, linked to the poll's CLIENT receive span.
	if process.SpanKind != trace.SpanKindConsumer || process.Parent.SpanID() != send.SpanContext.SpanID() ||
		!process.Parent.IsRemote() || process.SpanContext.TraceID() != traceID {
		t.Errorf("process span: kind %v parent %v (remote %v) trace %v; want CONSUMER child of send %v in trace %v",
			process.SpanKind, process.Parent.SpanID(), process.Parent.IsRemote(), process.SpanContext.TraceID(), send.SpanContext.SpanID(), traceID)
	}
	if receive.SpanKind != trace.SpanKindClient {
		t.Errorf("receive span kind %v, want CLIENT", receive.SpanKind)
	}
	if len(process.Links) != 1 || process.Links[0].SpanContext.SpanID() != receive.SpanContext.SpanID() {
		t.Errorf("process links %v, want one link to receive span %v", process.Links, receive.SpanContext.SpanID())
	}
	wantAttrs(t, process, map[string]any{"messaging.system": "orch8", "messaging.operation.type": "process",
		"messaging.destination.name": "default", "messaging.message.id": rec.ID, "orch8.handler": "traced",
		"orch8.attempt": int64(1), "orch8.worker.id": "go-" + t.Name(), "orch8.outcome": "completed"})
	if _, ok := attrs(process)["error.type"]; ok || process.Status.Code == codes.Error {
		t.Errorf("completed task: status %v attrs %v, want no error", process.Status, attrs(process))
	}

	// The process span is current while the handler runs: its own spans are children.
	if h.current.SpanID() != process.SpanContext.SpanID() {
		t.Errorf("handler's current span %v, want the process span %v", h.current.SpanID(), process.SpanContext.SpanID())
	}
	if inner.Parent.SpanID() != process.SpanContext.SpanID() || inner.SpanContext.TraceID() != traceID {
		t.Errorf("handler's span parent %v trace %v, want child of process %v", inner.Parent.SpanID(), inner.SpanContext.TraceID(), process.SpanContext.SpanID())
	}
}

// TestFailingHandlerSpanIsError_P_TEL_3: a failure ends the process span with status
// ERROR, orch8.outcome failed and error.type = the failure code.
func TestFailingHandlerSpanIsError_P_TEL_3(t *testing.T) {
	t.Parallel()
	srv := refserver.Start(t)
	env := newOtelEnv(t)
	c := newClient(t, srv, env.tel)
	startWorker(t, c, orch8.WorkerOptions{Telemetry: env.tel, QueueName: "images"}, map[string]orch8.Handler{
		"resize": func(ctx context.Context, task *orch8.Task) (any, error) {
			return nil, &orch8.PermanentError{Err: errors.New("not a PNG"), Code: "bad_image"}
		},
	})
	rec, err := c.Enqueue(context.Background(), orch8.NewTask{HandlerName: "resize", QueueName: orch8.Ptr("images")})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, rec.ID, orch8.StatusFailed)
	process := env.span(t, "process images")
	if process.Status.Code != codes.Error {
		t.Errorf("status %v, want ERROR", process.Status)
	}
	wantAttrs(t, process, map[string]any{"orch8.outcome": "failed", "error.type": "bad_image", "messaging.message.id": rec.ID,
		"messaging.destination.name": "images"})
	// Enqueued outside any span: the send span is a root and the process span its child.
	send := env.span(t, "send images")
	if send.Parent.IsValid() || process.Parent.SpanID() != send.SpanContext.SpanID() {
		t.Errorf("send parent %v, process parent %v; want a root send span and process as its child", send.Parent, process.Parent)
	}
}

// TestNoTraceparentStartsNewRoot_P_TEL_3: a task enqueued without telemetry carries no
// traceparent; its process span is a new root, even when Run's context carries a span.
func TestNoTraceparentStartsNewRoot_P_TEL_3(t *testing.T) {
	t.Parallel()
	srv := refserver.Start(t)
	env := newOtelEnv(t)
	plain := newClient(t, srv, nil)
	runCtx, runSpan := env.tp.Tracer("app").Start(context.Background(), "worker process lifetime")
	defer runSpan.End()
	startWorkerIn(t, runCtx, newClient(t, srv, env.tel), orch8.WorkerOptions{}, map[string]orch8.Handler{ // the client's telemetry
		"untraced": func(ctx context.Context, task *orch8.Task) (any, error) { return nil, nil },
	})
	rec, err := plain.Enqueue(context.Background(), orch8.NewTask{HandlerName: "untraced"})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, plain, rec.ID, orch8.StatusCompleted)
	if h := getHeaders(t, plain, rec.ID); h["traceparent"] != "" {
		t.Errorf("a client without telemetry sent traceparent %q", h["traceparent"])
	}
	process := env.span(t, "process default")
	if process.Parent.IsValid() {
		t.Errorf("process span parent %v, want a new root", process.Parent)
	}
	for _, s := range env.ended() {
		if s.Name == "send default" {
			t.Errorf("a client without telemetry recorded a send span")
		}
	}
}

func getHeaders(t *testing.T, c *orch8.Client, id string) map[string]string {
	t.Helper()
	rec, err := c.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Headers
}
