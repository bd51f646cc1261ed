// Package orch8test tests workers: a handler unit-tested without a server (docs/protocol.md
// 14c, P-KIT-1..6), and workflows run on a throwaway server whose clock the test moves
// (StartServer, section 17, P-CLOCK-1..5):
//
//	tt := orch8test.NewTestTask(orch8test.Options{Params: map[string]any{"n": 2}})
//	out := tt.Run(ctx, double)
//	// out.Status == "completed", out.Output == map[string]any{"n": 4.0}
//
//	srv := orch8test.StartServer(t)
//	inst := srv.RunUntilFinal(srv.Worker(handlers, orch8.WorkerOptions{}), instanceID)
//	// a one-hour sleep step is skipped: inst.Status == orch8.InstanceCompleted
//
// The handler gets a real *orch8.Task; the Outcome is what the worker would report, worked
// out by the worker's own code (classification, strict JSON, P-SDK-27 bounds, the shutdown
// message).
package orch8test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/api"
)

// MaxBodyBytes is the server's default body limit (section 13).
const MaxBodyBytes = 1 << 20

// MaxOutputDepth: P-ERR-5 allows 128 levels; a completion batch's body, its items array
// and the item object take three of them.
const MaxOutputDepth = 125

const leaseID = "test-lease-1"

// Options of a TestTask; each zero value means its default (P-KIT-2).
type Options struct {
	Params  map[string]any    // default {}
	Context map[string]any    // default {}
	Headers map[string]string // default {}
	// Attempt defaults to 1, MaxAttempts to 3.
	Attempt, MaxAttempts int
	// Checkpoint saved by an earlier attempt; nil when there is none.
	Checkpoint map[string]any
	// TaskID defaults to "test-task-1", HandlerName to "test-handler", QueueName to
	// "default", WorkerID (named in the shutdown message) to "test-worker".
	TaskID, HandlerName, QueueName, WorkerID string
	// LeaseDuration defaults to 60 s (the server's), GracePeriod to 25 s (the worker's).
	LeaseDuration, GracePeriod time.Duration
	// MaxBodyBytes defaults to 1 MiB (the server's).
	MaxBodyBytes int
	// OnHeartbeat is called with each heartbeat before it is answered; it may fire a trigger.
	OnHeartbeat func(Heartbeat)
}

// Heartbeat is one heartbeat the handler sent (P-KIT-3); nil where it gave none.
type Heartbeat struct {
	Progress   any            `json:"progress"`
	Checkpoint map[string]any `json:"checkpoint"`
}

// LogLine is one line written through TestTask.Logger: level debug, info, warning or error.
type LogLine struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// Outcome is what the worker would report for the attempt (P-KIT-5). Status is completed,
// failed, released (a yield, P-SDK-32), cancelled or lease_lost; Output, Details and
// Checkpoint are as JSON stores them.
type Outcome struct {
	Status     string
	Output     any
	Error      string
	Code       string
	Retryable  bool
	RetryAfter time.Duration
	Details    map[string]any
	Checkpoint map[string]any
	// Delay is a released task's delay before its next claim (P-SDK-32).
	Delay time.Duration
}

// TestTask is a claimed attempt for a unit test: the handler's inputs, records and triggers.
// Its triggers may be fired from any goroutine.
type TestTask struct {
	// Logger writes the lines Logs returns.
	Logger *slog.Logger
	// Task is what the handler receives.
	Task *orch8.Task

	opts   Options
	mu     sync.Mutex
	beats  []Heartbeat
	logs   []LogLine
	reason string                  // the first trigger's: cancelled, lease_lost or shutdown
	cause  error                   // its cancellation cause
	cancel context.CancelCauseFunc // set while Run runs
	ran    bool
}

// NewTestTask builds a TestTask; see Options for the defaults.
func NewTestTask(o Options) *TestTask {
	o = withDefaults(o)
	// What reaches a handler came through JSON: numbers are float64 (P-KIT-2).
	o.Params, o.Context, o.Checkpoint = asStored(o.Params), asStored(o.Context), asStored(o.Checkpoint)
	tt := &TestTask{opts: o}
	tt.Logger = slog.New(&recorder{tt: tt})
	now := time.Now().UTC()
	workerID := o.WorkerID
	ct := orch8.ClaimedTask{
		ID: o.TaskID, HandlerName: o.HandlerName, QueueName: o.QueueName, Params: o.Params,
		Context: o.Context, Headers: o.Headers, Attempt: o.Attempt, MaxAttempts: o.MaxAttempts,
		Checkpoint: o.Checkpoint, CreatedAt: now, ReadyAt: now,
		Lease:    orch8.Lease{ID: leaseID, WorkerID: &workerID, Attempt: o.Attempt, ExpiresAt: now.Add(o.LeaseDuration)},
		Metadata: api.TaskMetadata{Attempt: o.Attempt, MaxAttempts: o.MaxAttempts, CreatedAt: now},
	}
	tt.Task = orch8.KitTask(ct, tt.answer, tt.drop)
	return tt
}

func withDefaults(o Options) Options {
	or := func(s *string, def string) {
		if *s == "" {
			*s = def
		}
	}
	or(&o.TaskID, "test-task-1")
	or(&o.HandlerName, "test-handler")
	or(&o.QueueName, "default")
	or(&o.WorkerID, "test-worker")
	if o.Params == nil {
		o.Params = map[string]any{}
	}
	if o.Context == nil {
		o.Context = map[string]any{}
	}
	if o.Headers == nil {
		o.Headers = map[string]string{}
	}
	if o.Attempt == 0 {
		o.Attempt = 1
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = time.Minute
	}
	if o.GracePeriod == 0 {
		o.GracePeriod = 25 * time.Second
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = MaxBodyBytes
	}
	return o
}

// Heartbeats returns the heartbeats the server would have accepted, in order.
func (tt *TestTask) Heartbeats() []Heartbeat {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return append([]Heartbeat{}, tt.beats...)
}

// Checkpoints returns the checkpoints saved so far; the last is what the next attempt gets.
func (tt *TestTask) Checkpoints() []map[string]any {
	out := []map[string]any{}
	for _, hb := range tt.Heartbeats() {
		if hb.Checkpoint != nil {
			out = append(out, hb.Checkpoint)
		}
	}
	return out
}

// Logs returns the lines written through Logger.
func (tt *TestTask) Logs() []LogLine {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return append([]LogLine{}, tt.logs...)
}

// Cancel: an operator cancelled the task (P-SDK-5).
func (tt *TestTask) Cancel() { tt.fire("cancelled", orch8.ErrTaskCancelled) }

// LoseLease: the lease was lost (P-SDK-5).
func (tt *TestTask) LoseLease() { tt.fire("lease_lost", orch8.ErrLeaseLost) }

// Shutdown: the worker's grace period ran out now (P-SDK-7).
func (tt *TestTask) Shutdown() { tt.fire("shutdown", orch8.ErrShutdown) }

// fire records the first trigger and cancels the handler's ctx with its cause.
func (tt *TestTask) fire(reason string, cause error) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.reason != "" {
		return
	}
	tt.reason, tt.cause = reason, cause
	if tt.cancel != nil {
		tt.cancel(cause)
	}
}

// drop is the Task's: a heartbeat learnt the task is gone, which only a trigger causes.
func (tt *TestTask) drop(error) {}

// answer is the server's side of Task.Heartbeat (P-KIT-3, P-KIT-4).
func (tt *TestTask) answer(_ context.Context, body orch8.TaskHeartbeat) (*orch8.TaskLeaseStatus, error) {
	hb := Heartbeat{Progress: asJSON(body.Progress), Checkpoint: asStored(body.Checkpoint)}
	if tt.opts.OnHeartbeat != nil {
		tt.opts.OnHeartbeat(hb)
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	switch tt.reason {
	case "":
	case "cancelled":
		return nil, &orch8.ProblemError{Status: 409, Code: "task_cancelled", Detail: "task " + tt.opts.TaskID + " was cancelled"}
	default:
		return nil, &orch8.ProblemError{Status: 409, Code: "lease_lost", Detail: "lease " + leaseID + " is no longer current"}
	}
	tt.beats = append(tt.beats, hb)
	lease := tt.opts.LeaseDuration
	if body.LeaseMs != nil {
		lease = time.Duration(*body.LeaseMs) * time.Millisecond
	}
	return &orch8.TaskLeaseStatus{TaskID: tt.opts.TaskID, LeaseID: leaseID, LeaseExpiresAt: time.Now().UTC().Add(lease)}, nil
}

// Run runs h once and returns what the worker would report. It returns once h returns.
func (tt *TestTask) Run(ctx context.Context, h orch8.Handler) Outcome {
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(context.Canceled)
	tt.mu.Lock()
	if tt.ran {
		tt.mu.Unlock()
		panic("orch8test: a TestTask runs one handler once; build another")
	}
	tt.ran, tt.cancel = true, cancel
	if tt.cause != nil {
		cancel(tt.cause)
	}
	tt.mu.Unlock()

	raw, failure, release := orch8.KitRun(hctx, h, tt.Task)

	tt.mu.Lock()
	reason := tt.reason
	tt.cancel = nil
	tt.mu.Unlock()
	switch {
	case reason == "shutdown":
		rep := orch8.KitShutdown(tt.opts.WorkerID, tt.opts.GracePeriod)
		return failed(rep)
	case reason != "": // P-SDK-5: nothing is reported
		return Outcome{Status: reason}
	case failure != nil:
		return failed(*failure)
	case release != nil:
		return Outcome{Status: "released", Checkpoint: asStored(release.Checkpoint),
			Delay: time.Duration(*release.DelayMs) * time.Millisecond}
	}
	var stored any
	if err := json.Unmarshal(raw, &stored); err != nil {
		panic(fmt.Sprintf("orch8test: the worker's own JSON does not decode: %v", err))
	}
	if pe := refusal(raw, stored, tt.opts.MaxBodyBytes); pe != nil {
		return failed(orch8.KitRefused(pe))
	}
	return Outcome{Status: "completed", Output: stored}
}

func failed(rep orch8.TaskFailureReport) Outcome {
	o := Outcome{Status: "failed", Error: rep.Error, Details: asStored(rep.Details), Checkpoint: asStored(rep.Checkpoint)}
	if rep.Code != nil {
		o.Code = *rep.Code
	}
	if rep.Retryable != nil {
		o.Retryable = *rep.Retryable
	}
	if rep.RetryAfterMs != nil {
		o.RetryAfter = time.Duration(*rep.RetryAfterMs) * time.Millisecond
	}
	return o
}

// asStored is an object as the server stores and returns it: through JSON.
func asStored(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out, _ := asJSON(m).(map[string]any)
	return out
}

// asJSON is v through JSON, as a value the client could not encode is never sent: as is.
func asJSON(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return v
	}
	return out
}

// refusal is how the server would refuse a completion carrying this output alone
// (P-ERR-5, P-KIT-5); nil when it would take it.
func refusal(raw []byte, stored any, maxBodyBytes int) *orch8.ProblemError {
	if len(raw) > maxBodyBytes {
		return &orch8.ProblemError{Status: 413, Code: "payload_too_large", Title: "Payload too large",
			Detail: fmt.Sprintf("output of %d bytes is over the body limit of %d", len(raw), maxBodyBytes)}
	}
	deepest, nul := walk(stored)
	if deepest > MaxOutputDepth {
		return &orch8.ProblemError{Status: 400, Code: "payload_too_deep", Title: "Payload too deep",
			Detail: fmt.Sprintf("output nested deeper than %d levels", MaxOutputDepth)}
	}
	if nul {
		return &orch8.ProblemError{Status: 400, Code: "unsupported_value", Title: "Unsupported value",
			Detail: "output holds a NUL character"}
	}
	return nil
}

// walk returns the levels of arrays and objects in v ([] is 1) and whether a string or key
// holds NUL; iterative, so no depth is too deep for it.
func walk(v any) (deepest int, nul bool) {
	type item struct {
		v     any
		level int
	}
	stack := []item{{v, 1}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := it.v.(type) {
		case string:
			nul = nul || strings.ContainsRune(x, 0)
		case []any:
			deepest = max(deepest, it.level)
			for _, c := range x {
				stack = append(stack, item{c, it.level + 1})
			}
		case map[string]any:
			deepest = max(deepest, it.level)
			for k, c := range x {
				nul = nul || strings.ContainsRune(k, 0)
				stack = append(stack, item{c, it.level + 1})
			}
		}
	}
	return deepest, nul
}

// recorder is the slog.Handler behind TestTask.Logger.
type recorder struct{ tt *TestTask }

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	level := "error"
	switch {
	case rec.Level < slog.LevelInfo:
		level = "debug"
	case rec.Level < slog.LevelWarn:
		level = "info"
	case rec.Level < slog.LevelError:
		level = "warning"
	}
	r.tt.mu.Lock()
	r.tt.logs = append(r.tt.logs, LogLine{Level: level, Message: rec.Message})
	r.tt.mu.Unlock()
	return nil
}
