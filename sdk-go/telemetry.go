package orch8

import (
	"context"
	"time"
)

// Telemetry receives the client's and the worker's tracing and metric points
// (docs/protocol.md section 15). This module has no OpenTelemetry dependency: the separate
// module github.com/orch8/orch8-workers/sdk-go/orch8otel implements Telemetry with
// OpenTelemetry (orch8otel.New()). Give it as Config.Telemetry and WorkerOptions.Telemetry;
// when it is nil the SDK makes none of these calls, so its cost is unchanged.
// Implementations must be safe for concurrent use and return quickly.
type Telemetry interface {
	// StartSend begins the producer span of one enqueue or enqueue batch (P-TEL-1) and
	// returns the context the request is sent in.
	StartSend(ctx context.Context, info SendInfo) (context.Context, SendSpan)
	// Receive records a batch poll that claimed tasks, from info.Began until now (P-TEL-3);
	// the context it returns carries that poll's span, for StartProcess to link to.
	Receive(ctx context.Context, info ReceiveInfo) context.Context
	// StartProcess begins one claimed task's run (P-TEL-3) and records its
	// schedule-to-start wait (P-TEL-4). The returned context is the handler's: its span is
	// current while the handler runs. receive is the context Receive returned.
	StartProcess(ctx, receive context.Context, info ProcessInfo) (context.Context, ProcessSpan)
	// Polled counts one poll answered or failed: PollClaimed, PollEmpty or PollError (P-TEL-4).
	Polled(ctx context.Context, outcome string)
	// Heartbeat counts one worker heartbeat: HeartbeatOK or HeartbeatError (P-TEL-4).
	Heartbeat(ctx context.Context, outcome string)
	// Slots reports that the tasks held changed by delta, leaving free slots (P-TEL-4).
	Slots(ctx context.Context, delta, free int)
}

// SendInfo describes one enqueue for Telemetry.StartSend.
type SendInfo struct {
	// Queue is the destination queue; empty when a batch names several queues.
	Queue string
	// Batch is true for EnqueueBatch; Count is then the number of tasks.
	Batch bool
	Count int
}

// SendSpan is the producer span of one enqueue (P-TEL-1).
type SendSpan interface {
	// Inject writes the span's W3C trace context (traceparent, and tracestate when not
	// empty) into a task's headers. The SDK calls it only for tasks without a
	// caller-set traceparent: the caller's wins (P-TEL-1).
	Inject(headers map[string]string)
	// End ends the span with the ids of the tasks created, or the error of the call.
	End(ids []string, err error)
}

// ReceiveInfo describes one batch poll that claimed tasks, for Telemetry.Receive (P-TEL-3).
type ReceiveInfo struct {
	// Queue is the claimed tasks' queue; empty when they came from several queues.
	Queue string
	// Count is the number of tasks the poll claimed (messaging.batch.message_count).
	Count    int
	WorkerID string
	// Began is when the poll was sent: the span starts there.
	Began time.Time
}

// ProcessInfo describes one claimed task for Telemetry.StartProcess (P-TEL-3).
type ProcessInfo struct {
	TaskID   string
	Queue    string
	Handler  string
	WorkerID string
	Attempt  int
	// Headers are the task's headers as received; their traceparent is the span's parent.
	Headers map[string]string
	// ReadyAt is when the attempt became claimable; zero when the server did not say.
	ReadyAt time.Time
	// ClaimedAt is when the poll handed the task over.
	ClaimedAt time.Time
}

// ProcessSpan is one task's run; End is called once, when its outcome is known.
type ProcessSpan interface {
	End(ProcessResult)
}

// ProcessResult is how a task left the worker (P-TEL-3, P-TEL-4).
type ProcessResult struct {
	// Outcome is OutcomeCompleted, OutcomeFailed, OutcomeLeaseLost or OutcomeCancelled.
	Outcome string
	// ErrorType is the failure code sent when Outcome is OutcomeFailed.
	ErrorType string
	// Duration is the handler's run time.
	Duration time.Duration
}

// Values of the attribute orch8.outcome (P-TEL-3, P-TEL-4).
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
	OutcomeLeaseLost = "lease_lost"
	OutcomeCancelled = "cancelled"
	OutcomeReleased  = "released" // a yield (P-SDK-32) or an expiry before the start (P-SDK-33)
	PollClaimed      = "claimed"
	PollEmpty        = "empty"
	PollError        = "error"
	HeartbeatOK      = "ok"
	HeartbeatError   = "error"
)

// DefaultQueue is the queue of tasks enqueued without one (P-QUEUE-1).
const DefaultQueue = "default"
