// Package orch8otel is the OpenTelemetry implementation of orch8.Telemetry
// (docs/protocol.md section 15): producer, receive and process spans with W3C trace
// context in task headers, and the worker metrics of P-TEL-4 on the meter "orch8".
// It is a module of its own, so the core SDK never depends on OpenTelemetry.
//
//	tel := orch8otel.New() // the global tracer and meter providers
//	client, _ := orch8.NewClient(orch8.Config{Telemetry: tel})
//	worker, _ := orch8.NewWorker(client, orch8.WorkerOptions{Telemetry: tel})
package orch8otel

import (
	"context"
	"errors"
	"fmt"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and the meter (P-TEL-4: meter "orch8").
const ScopeName = "orch8"

// Attribute keys of P-TEL-1, P-TEL-3 and P-TEL-4.
const (
	AttrMessagingSystem   = attribute.Key("messaging.system")
	AttrOperationType     = attribute.Key("messaging.operation.type")
	AttrDestinationName   = attribute.Key("messaging.destination.name")
	AttrMessageID         = attribute.Key("messaging.message.id")
	AttrBatchMessageCount = attribute.Key("messaging.batch.message_count")
	AttrHandler           = attribute.Key("orch8.handler")
	AttrAttempt           = attribute.Key("orch8.attempt")
	AttrWorkerID          = attribute.Key("orch8.worker.id")
	AttrOutcome           = attribute.Key("orch8.outcome")
	AttrErrorType         = attribute.Key("error.type")
)

// Option configures New.
type Option func(*config)

type config struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// WithTracerProvider records spans with tp instead of the global tracer provider.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider records metrics with mp instead of the global meter provider.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// Telemetry implements orch8.Telemetry with OpenTelemetry. Build it with New; one value
// may serve any number of clients and workers.
type Telemetry struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	m      instruments
}

var _ orch8.Telemetry = (*Telemetry)(nil)

// New returns the OpenTelemetry telemetry for orch8.Config.Telemetry and
// orch8.WorkerOptions.Telemetry. It uses the global tracer and meter providers (as set by
// otel.SetTracerProvider / otel.SetMeterProvider, even later) unless given its own. Trace
// context always travels as W3C traceparent/tracestate, whatever the global propagator (P-TEL-1).
func New(opts ...Option) orch8.Telemetry {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	return &Telemetry{
		tracer: c.tp.Tracer(ScopeName, trace.WithInstrumentationVersion(orch8.Version)),
		prop:   propagation.TraceContext{},
		m:      newInstruments(c.mp.Meter(ScopeName, metric.WithInstrumentationVersion(orch8.Version))),
	}
}

var systemAttr = AttrMessagingSystem.String("orch8")

// spanName is "<operation> <queue>", or the operation alone when the queue is not one.
func spanName(op, queue string) string {
	if queue == "" {
		return op
	}
	return op + " " + queue
}

// StartSend starts the PRODUCER span "send <queue>", a child of ctx's span (P-TEL-1).
func (t *Telemetry) StartSend(ctx context.Context, info orch8.SendInfo) (context.Context, orch8.SendSpan) {
	attrs := []attribute.KeyValue{systemAttr, AttrOperationType.String("send")}
	if info.Queue != "" {
		attrs = append(attrs, AttrDestinationName.String(info.Queue))
	}
	if info.Batch {
		attrs = append(attrs, AttrBatchMessageCount.Int(info.Count))
	}
	ctx, span := t.tracer.Start(ctx, spanName("send", info.Queue), trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	return ctx, &sendSpan{ctx: ctx, span: span, prop: t.prop, batch: info.Batch}
}

type sendSpan struct {
	ctx   context.Context
	span  trace.Span
	prop  propagation.TextMapPropagator
	batch bool
}

// Inject writes traceparent (and tracestate when not empty) into headers (P-TEL-1).
func (s *sendSpan) Inject(headers map[string]string) {
	s.prop.Inject(s.ctx, propagation.MapCarrier(headers))
}

func (s *sendSpan) End(ids []string, err error) {
	if !s.batch && len(ids) == 1 {
		s.span.SetAttributes(AttrMessageID.String(ids[0]))
	}
	if err != nil {
		s.span.SetAttributes(AttrErrorType.String(errorType(err)))
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.span.End()
}

// errorType is the problem code of a refused call, else the error's Go type.
func errorType(err error) string {
	var pe *orch8.ProblemError
	if errors.As(err, &pe) && pe.Code != "" {
		return pe.Code
	}
	return fmt.Sprintf("%T", err)
}

// Receive records the CLIENT span "receive <queue>" of a poll that claimed tasks, from
// began until now (P-TEL-3). It is recorded once the poll answered, because only polls
// that claim tasks get a span.
func (t *Telemetry) Receive(ctx context.Context, info orch8.ReceiveInfo) context.Context {
	attrs := []attribute.KeyValue{systemAttr, AttrOperationType.String("receive"),
		AttrBatchMessageCount.Int(info.Count), AttrWorkerID.String(info.WorkerID)}
	if info.Queue != "" { // several queues: "receive" alone, no destination (P-TEL-3)
		attrs = append(attrs, AttrDestinationName.String(info.Queue))
	}
	ctx, span := t.tracer.Start(ctx, spanName("receive", info.Queue), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(info.Began), trace.WithAttributes(attrs...))
	span.End()
	return ctx
}

// StartProcess starts the CONSUMER span "process <queue>": the child of the task's
// traceparent (a new root without one), linked to the poll's receive span (P-TEL-3).
func (t *Telemetry) StartProcess(ctx, receive context.Context, info orch8.ProcessInfo) (context.Context, orch8.ProcessSpan) {
	queue := attribute.NewSet(AttrDestinationName.String(info.Queue), AttrHandler.String(info.Handler))
	if !info.ReadyAt.IsZero() { // absent from servers before contract 1.3.0
		wait := max(info.ClaimedAt.Sub(info.ReadyAt).Seconds(), 0) // clocks may differ a little
		t.m.scheduleToStart.Record(ctx, wait, metric.WithAttributeSet(queue))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		systemAttr, AttrOperationType.String("process"), AttrDestinationName.String(info.Queue),
		AttrMessageID.String(info.TaskID), AttrHandler.String(info.Handler), AttrAttempt.Int(info.Attempt),
		AttrWorkerID.String(info.WorkerID))}
	if l := trace.LinkFromContext(receive); l.SpanContext.IsValid() {
		opts = append(opts, trace.WithLinks(l))
	}
	parent := t.prop.Extract(ctx, propagation.MapCarrier(info.Headers))
	if !trace.SpanContextFromContext(parent).IsRemote() {
		// No traceparent: a new root, never a child of whatever span the worker's Run
		// context happens to carry.
		opts = append(opts, trace.WithNewRoot())
	}
	ctx, span := t.tracer.Start(parent, spanName("process", info.Queue), opts...)
	return ctx, &processSpan{span: span, m: &t.m, attrs: queue}
}

type processSpan struct {
	span  trace.Span
	m     *instruments
	attrs attribute.Set // queue and handler
}

// End sets orch8.outcome (and error.type with status ERROR for a failure) and records
// the task's metrics (P-TEL-3, P-TEL-4).
func (p *processSpan) End(r orch8.ProcessResult) {
	ctx := context.Background()
	p.span.SetAttributes(AttrOutcome.String(r.Outcome))
	base := p.attrs.ToSlice()
	switch r.Outcome {
	case orch8.OutcomeCompleted:
		p.m.completed.Add(ctx, 1, metric.WithAttributeSet(p.attrs))
	case orch8.OutcomeFailed:
		p.span.SetAttributes(AttrErrorType.String(r.ErrorType))
		p.span.SetStatus(codes.Error, r.ErrorType)
		p.m.failed.Add(ctx, 1, metric.WithAttributes(append(base, AttrErrorType.String(r.ErrorType))...))
	case orch8.OutcomeLeaseLost:
		p.m.leaseLosses.Add(ctx, 1, metric.WithAttributeSet(p.attrs))
	}
	p.m.duration.Record(ctx, r.Duration.Seconds(), metric.WithAttributes(append(base, AttrOutcome.String(r.Outcome))...))
	p.span.End()
}

// Polled counts a poll by outcome (P-TEL-4).
func (t *Telemetry) Polled(ctx context.Context, outcome string) {
	t.m.polls.Add(ctx, 1, metric.WithAttributeSet(outcomeSet(outcome)))
}

// Heartbeat counts a worker heartbeat by outcome (P-TEL-4).
func (t *Telemetry) Heartbeat(ctx context.Context, outcome string) {
	t.m.heartbeats.Add(ctx, 1, metric.WithAttributeSet(outcomeSet(outcome)))
}

// Slots moves the in-flight counter and sets the free-slots gauge (P-TEL-4).
func (t *Telemetry) Slots(ctx context.Context, delta, free int) {
	t.m.inFlight.Add(ctx, int64(delta))
	t.m.slotsFree.Record(ctx, int64(free))
}

func outcomeSet(outcome string) attribute.Set {
	return attribute.NewSet(AttrOutcome.String(outcome))
}
