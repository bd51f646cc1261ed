// Command orch8-conformance-adapter is the conformance adapter for the Go SDK.
//
// It builds a Worker from the ORCH8_* environment (conformance/README.md, "Adapter
// contract"), registers the fixed handler table and prints JSON-line events on stdout.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

var (
	// Empty: the SDK's default id (P-SDK-21); main replaces it with the worker's own.
	workerID = os.Getenv("ORCH8_WORKER_ID")
	outMu    sync.Mutex
)

func emit(event string, t *orch8.Task, fields map[string]any) {
	record := map[string]any{"event": event, "t": time.Now().UnixMilli(), "worker_id": workerID}
	if t != nil {
		record["task_id"], record["handler"], record["attempt"] = t.ID, t.HandlerName, t.Attempt
	}
	for k, v := range fields {
		record[k] = v
	}
	line, _ := json.Marshal(record)
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(line, '\n'))
}

func output(t *orch8.Task, extra map[string]any) map[string]any {
	out := map[string]any{"handler": t.HandlerName, "attempt": t.Attempt, "worker_id": workerID}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func param(t *orch8.Task, key string, def float64) float64 {
	if v, ok := t.Params[key].(float64); ok {
		return v
	}
	return def
}

func ms(v float64) time.Duration { return time.Duration(v) * time.Millisecond }

// pause waits up to d unless ctx is cancelled; it reports the cancellation. True if cancelled.
func pause(ctx context.Context, t *orch8.Task, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return false
	case <-ctx.Done():
		reason := "cancelled"
		if cause := context.Cause(ctx); cause != nil {
			reason = cause.Error()
		}
		emit("cancelled", t, map[string]any{"reason": reason})
		return true
	}
}

var handlers = map[string]orch8.Handler{
	"echo": func(ctx context.Context, t *orch8.Task) (any, error) {
		pause(ctx, t, ms(param(t, "sleep_ms", 0)))
		return output(t, map[string]any{"echo": t.Params}), nil
	},
	// A workflow step: its params (references resolved) and its context (P-WF-4).
	"echo_context": func(ctx context.Context, t *orch8.Task) (any, error) {
		pause(ctx, t, ms(param(t, "sleep_ms", 0)))
		return output(t, map[string]any{"echo": t.Params, "context": t.Context}), nil
	},
	"fail_once": func(ctx context.Context, t *orch8.Task) (any, error) {
		if t.Attempt == 1 {
			return nil, orch8.Retryable(errors.New("fail_once: the first attempt fails"), 0)
		}
		return output(t, nil), nil
	},
	"fail_always": func(ctx context.Context, t *orch8.Task) (any, error) {
		code, _ := t.Params["code"].(string) // P-SDK-20: empty means the default code
		details, _ := t.Params["details"].(map[string]any)
		if permanent, _ := t.Params["permanent"].(bool); permanent {
			return nil, &orch8.PermanentError{Err: errors.New("fail_always: permanent failure"), Code: code, Details: details}
		}
		return nil, &orch8.RetryableError{Err: errors.New("fail_always: retryable failure"), Code: code, Details: details}
	},
	"unhandled": func(ctx context.Context, t *orch8.Task) (any, error) {
		panic("unhandled: a panic the handler did not classify")
	},
	"slow": func(ctx context.Context, t *orch8.Task) (any, error) {
		duration, every := param(t, "duration_ms", 2000), param(t, "heartbeat_ms", 200)
		start := time.Now()
		for elapsed := 0.0; elapsed < duration; elapsed = float64(time.Since(start).Milliseconds()) {
			_ = t.Heartbeat(ctx, map[string]any{"elapsed_ms": elapsed}, nil) // lease loss cancels ctx
			if pause(ctx, t, ms(min(every, duration-elapsed))) {
				return output(t, map[string]any{"cancelled": true}), nil
			}
		}
		return output(t, map[string]any{"slow_ms": duration}), nil
	},
	"stall": func(ctx context.Context, t *orch8.Task) (any, error) {
		if float64(t.Attempt) <= param(t, "stall_attempts", 1) {
			time.Sleep(ms(param(t, "stall_ms", 5000))) // deaf to cancellation on purpose
			return output(t, map[string]any{"stalled": true}), nil
		}
		pause(ctx, t, ms(param(t, "after_ms", 0)))
		return output(t, map[string]any{"stalled": false}), nil
	},
	"crash": func(ctx context.Context, t *orch8.Task) (any, error) {
		if float64(t.Attempt) <= param(t, "crash_attempts", 1) {
			os.Exit(3)
		}
		return output(t, nil), nil
	},
	"wait_for_cancel": func(ctx context.Context, t *orch8.Task) (any, error) {
		return output(t, map[string]any{"cancelled": pause(ctx, t, ms(param(t, "timeout_ms", 30000)))}), nil
	},
	"checkpoint": func(ctx context.Context, t *orch8.Task) (any, error) {
		if t.Checkpoint == nil {
			if err := t.Heartbeat(ctx, nil, map[string]any{"step": 1, "saved_by_attempt": t.Attempt}); err != nil {
				return nil, err
			}
			return nil, orch8.Retryable(errors.New("checkpoint: saved one, failing so the next attempt gets it"), 0)
		}
		return output(t, map[string]any{"checkpoint": t.Checkpoint}), nil
	},
	"retry_after": func(ctx context.Context, t *orch8.Task) (any, error) {
		if t.Attempt == 1 {
			return nil, orch8.Retryable(errors.New("retry_after"), ms(param(t, "retry_after_ms", 1000)))
		}
		return output(t, nil), nil
	},
}

// moreHandlers are the handlers of the SDK-rule scenarios (P-SDK-15, P-SDK-19, P-SDK-20).
var moreHandlers = map[string]orch8.Handler{
	// An output strict JSON cannot encode: NaN, Infinity or a cycle.
	"non_json_output": func(ctx context.Context, t *orch8.Task) (any, error) {
		switch t.Params["kind"] {
		case "cycle":
			loop := map[string]any{"handler": t.HandlerName}
			loop["self"] = loop
			return loop, nil
		case "infinity":
			return output(t, map[string]any{"value": math.Inf(1)}), nil
		}
		return output(t, map[string]any{"value": math.NaN()}), nil
	},
	"huge_output": func(ctx context.Context, t *orch8.Task) (any, error) {
		pause(ctx, t, ms(param(t, "sleep_ms", 0)))
		blob := strings.Repeat("x", int(param(t, "bytes", 200000)))
		return output(t, map[string]any{"echo": t.Params, "blob": blob}), nil
	},
	// An output nested `depth` objects deep: depth 1 is {"d": 0} (P-ERR-5, P-SDK-15).
	"deep_output": func(ctx context.Context, t *orch8.Task) (any, error) {
		pause(ctx, t, ms(param(t, "sleep_ms", 0)))
		var value any = 0
		for range int(param(t, "depth", 1)) {
			value = map[string]any{"d": value}
		}
		return value, nil
	},
	// A typed error with a message, details and checkpoint as large as asked (P-SDK-27).
	"huge_error": func(ctx context.Context, t *orch8.Task) (any, error) {
		message := "huge error"
		if _, ok := t.Params["message_bytes"]; ok {
			message = strings.Repeat("x", int(param(t, "message_bytes", 0)))
		}
		var details, saved map[string]any
		if _, ok := t.Params["details_bytes"]; ok {
			details = map[string]any{"blob": strings.Repeat("y", int(param(t, "details_bytes", 0)))}
		}
		if _, ok := t.Params["checkpoint_bytes"]; ok {
			saved = map[string]any{"blob": strings.Repeat("z", int(param(t, "checkpoint_bytes", 0)))}
		}
		if retryable, _ := t.Params["retryable"].(bool); retryable {
			return nil, &orch8.RetryableError{Err: errors.New(message), Details: details, Checkpoint: saved}
		}
		return nil, &orch8.PermanentError{Err: errors.New(message), Details: details, Checkpoint: saved}
	},
	"retryable_with_checkpoint": func(ctx context.Context, t *orch8.Task) (any, error) {
		if t.Checkpoint == nil {
			return nil, &orch8.RetryableError{
				Err: errors.New("retryable_with_checkpoint"), Code: "checkpointed", Details: map[string]any{"step": 1},
				Checkpoint: map[string]any{"step": 1, "saved_by_attempt": t.Attempt},
			}
		}
		return output(t, map[string]any{"checkpoint": t.Checkpoint}), nil
	},
	// Yields (P-SDK-32) until the checkpoint counts `yields` of them, then returns it.
	"yield_checkpoint": func(ctx context.Context, t *orch8.Task) (any, error) {
		done, _ := t.Checkpoint["yields"].(float64)
		if done < param(t, "yields", 2.0) {
			return nil, orch8.Yield(map[string]any{"yields": done + 1, "saved_by_attempt": t.Attempt}, 0)
		}
		return output(t, map[string]any{"checkpoint": t.Checkpoint}), nil
	},
	// Deaf to ctx; only its own heartbeat can learn of a cancel or a lost lease.
	"heartbeat_after_cancel": func(ctx context.Context, t *orch8.Task) (any, error) {
		if float64(t.Attempt) > param(t, "lose_attempts", 1) {
			return output(t, map[string]any{"heartbeat_errors": 0}), nil
		}
		deadline := time.Now().Add(ms(param(t, "timeout_ms", 10000)))
		for time.Now().Before(deadline) {
			time.Sleep(ms(param(t, "every_ms", 200)))
			err := t.Heartbeat(context.Background(), map[string]any{"alive": true}, nil)
			if errors.Is(err, orch8.ErrLeaseLost) || errors.Is(err, orch8.ErrTaskCancelled) {
				code := "lease_lost"
				if errors.Is(err, orch8.ErrTaskCancelled) {
					code = "task_cancelled"
				}
				emit("heartbeat_error", t, map[string]any{"error": code, "signal_fired": ctx.Err() != nil})
				pause(ctx, t, 0)
				return nil, err
			}
		}
		return output(t, map[string]any{"timed_out": true}), nil
	},
}

// reportHooks turns every hook into a `hook` event; outcomes are followed by a `stats`
// event (P-SDK-11).
func reportHooks(w **orch8.Worker) orch8.Hooks {
	hook := func(name string, t *orch8.Task, fields map[string]any) {
		fields["hook"] = name
		if t != nil {
			fields["task_id"] = t.ID
		}
		emit("hook", nil, fields)
	}
	stats := func() { emit("stats", nil, map[string]any{"stats": (*w).Stats()}) }
	// ORCH8_HOOKS_RAISE: every hook panics after reporting (P-SDK-11: logged and ignored).
	boom := func(name string) {
		if os.Getenv("ORCH8_HOOKS_RAISE") != "" {
			panic("conformance: hook " + name + " panics on purpose")
		}
	}
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return orch8.Hooks{
		OnPoll: func(e orch8.PollEvent) {
			hook("poll", nil, map[string]any{"claimed": e.Claimed, "duration_ms": msOf(e.Duration)})
			boom("OnPoll")
		},
		OnTaskStart: func(e orch8.TaskStartEvent) {
			hook("task_start", e.Task, map[string]any{})
			boom("OnTaskStart")
		},
		OnTaskComplete: func(e orch8.TaskCompleteEvent) {
			hook("task_complete", e.Task, map[string]any{"duration_ms": msOf(e.Duration)})
			stats()
			boom("OnTaskComplete")
		},
		OnTaskFail: func(e orch8.TaskFailEvent) {
			hook("task_fail", e.Task, map[string]any{"code": e.Code, "retryable": e.Retryable, "duration_ms": msOf(e.Duration)})
			stats()
			boom("OnTaskFail")
		},
		OnTaskAbandoned: func(e orch8.TaskAbandonedEvent) {
			hook("task_abandoned", e.Task, map[string]any{"reason": e.Reason})
			stats()
			boom("OnTaskAbandoned")
		},
		OnError: func(e orch8.ErrorEvent) {
			hook("error", nil, map[string]any{"operation": e.Operation, "error": fmt.Sprint(e.Err)})
			boom("OnError")
		},
	}
}

func observed(h orch8.Handler) orch8.Handler {
	return func(ctx context.Context, t *orch8.Task) (out any, err error) {
		emit("start", t, nil)
		result := "error"
		defer func() { emit("end", t, map[string]any{"result": result}) }()
		out, err = h(ctx, t)
		if err == nil {
			result = "ok"
		}
		return out, err
	}
}

func envMs(key string) time.Duration {
	v, err := strconv.Atoi(os.Getenv(key))
	if err != nil {
		return 0
	}
	return ms(float64(v))
}

// envPairs reads ORCH8_QUEUE_WEIGHTS / ORCH8_LABELS ("k=v,k=v"); nil when unset.
func envPairs(key string) map[string]string {
	raw := os.Getenv(key)
	if raw == "" {
		return nil
	}
	out := map[string]string{}
	for _, item := range strings.Split(raw, ",") {
		if k, v, ok := strings.Cut(item, "="); ok {
			out[k] = v
		}
	}
	return out
}

// waitInstance: ORCH8_WAIT_INSTANCE, the client's WaitInstance on that id (P-SDK-25).
// Reports `waited` (the final status) or `wait_timeout` (the last status seen).
func waitInstance(client *orch8.Client) {
	id := os.Getenv("ORCH8_WAIT_INSTANCE")
	if id == "" {
		return
	}
	timeout := envMs("ORCH8_WAIT_TIMEOUT_MS")
	inst, err := client.WaitInstance(context.Background(), id, timeout)
	var timedOut *orch8.WaitTimeoutError
	switch {
	case err == nil:
		emit("waited", nil, map[string]any{"instance_id": id, "status": string(inst.Status)})
	case errors.As(err, &timedOut):
		var last any
		if timedOut.Instance != nil {
			last = string(timedOut.Instance.Status)
		}
		emit("wait_timeout", nil, map[string]any{"instance_id": id, "last_status": last})
	default:
		emit("wait_error", nil, map[string]any{"instance_id": id, "error": err.Error()})
	}
}

func main() {
	slog.SetDefault(slog.New(logEvents{next: slog.NewTextHandler(os.Stderr, nil)}))
	// An empty Config: the SDK reads ORCH8_URL and ORCH8_API_KEY itself (P-SDK-1).
	client, err := orch8.NewClient(orch8.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	concurrency, _ := strconv.Atoi(os.Getenv("ORCH8_CONCURRENCY"))
	grace := envMs("ORCH8_GRACE_PERIOD_MS")
	if os.Getenv("ORCH8_GRACE_PERIOD_MS") == "0" {
		grace = -1 // the SDK's "no grace period"
	}
	for name, h := range moreHandlers {
		handlers[name] = h
	}
	handlers["echo_trace"] = echoTrace
	handlers["video_renderer"] = handlers["echo_context"] // seed 000's step JSON, verbatim (workflow-block-step)
	telemetry, flushSpans := buildTelemetry()
	extra, _ := strconv.Atoi(os.Getenv("ORCH8_EXTRA_HANDLERS"))
	for i := 1; i <= extra; i++ {
		handlers[fmt.Sprintf("extra_%d", i)] = handlers["echo"]
	}
	var queueNames []string
	if v := os.Getenv("ORCH8_QUEUE_NAMES"); v != "" {
		queueNames = strings.Split(v, ",")
	}
	var queueWeights map[string]int
	if weights := envPairs("ORCH8_QUEUE_WEIGHTS"); weights != nil {
		queueWeights = map[string]int{}
		for name, v := range weights {
			queueWeights[name], _ = strconv.Atoi(v)
		}
	}
	var w *orch8.Worker
	w, err = orch8.NewWorker(client, orch8.WorkerOptions{
		Hooks:             reportHooks(&w),
		WorkerID:          workerID,
		Concurrency:       concurrency,
		GracePeriod:       grace,
		QueueName:         os.Getenv("ORCH8_QUEUE"),
		QueueNames:        queueNames,
		QueueWeights:      queueWeights,
		Labels:            envPairs("ORCH8_LABELS"),
		PollWait:          envMs("ORCH8_WAIT_MS"),
		LeaseDuration:     envMs("ORCH8_LEASE_MS"),
		HeartbeatInterval: envMs("ORCH8_HEARTBEAT_INTERVAL_MS"),
		Telemetry:         telemetry, // P-TEL-3 (ORCH8_TELEMETRY); nil: none
	})
	if err != nil { // P-SDK-23: the SDK refuses the options before any request
		fmt.Fprintln(os.Stderr, "orch8 NewWorker refused its options:", err)
		os.Exit(2)
	}
	workerID = w.ID()
	names := strings.FieldsFunc(os.Getenv("ORCH8_HANDLERS"), func(r rune) bool { return r == ',' })
	all := len(names) == 0
	for name := range handlers {
		if all || (extra > 0 && strings.HasPrefix(name, "extra_")) {
			names = append(names, name)
		}
	}
	for _, name := range names {
		w.Handle(name, observed(handlers[name]))
	}
	emit("ready", nil, map[string]any{"sdk": "go", "tracing": telemetry != nil, "logs": true})
	go waitInstance(client)
	if err := w.RunWithSignals(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	emit("stopped", nil, map[string]any{"stats": w.Stats()})
	flushSpans() // exports the spans still batched (the end-to-end trace test)
}
