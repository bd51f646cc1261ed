package orch8test_test

// The test kit (P-KIT-1..6): every case of conformance/kit-cases.json, plus Go's own. Each
// handler of the table is written here under its name; a case naming a handler this file
// lacks fails, so the three SDKs' kits cannot drift apart.

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/orch8test"
)

type kitCase struct {
	ID      string         `json:"id"`
	Handler string         `json:"handler"`
	Task    map[string]any `json:"task"`
	Trigger *struct {
		Fire        string `json:"fire"`
		AtHeartbeat int    `json:"at_heartbeat"`
		Then        string `json:"then"`
	} `json:"trigger"`
	Expect map[string]any `json:"expect"`
}

type kitHandler func(tt *orch8test.TestTask, ctx context.Context, t *orch8.Task) (any, error)

const signalWait = 10 * time.Second // a bound for a broken kit, never reached when the signal fires

func str(t *orch8.Task, k string) string { s, _ := t.Params[k].(string); return s }
func num(t *orch8.Task, k string) int    { f, _ := t.Params[k].(float64); return int(f) }
func obj(t *orch8.Task, k string) map[string]any {
	m, _ := t.Params[k].(map[string]any)
	return m
}

var handlers = map[string]kitHandler{
	"reads_task": func(_ *orch8test.TestTask, _ context.Context, t *orch8.Task) (any, error) {
		return map[string]any{"params": t.Params, "context": t.Context, "headers": t.Headers, "attempt": t.Attempt,
			"max_attempts": t.MaxAttempts, "checkpoint": t.Checkpoint, "task_id": t.ID, "handler_name": t.HandlerName,
			"queue_name": t.QueueName, "lease_id": t.LeaseID}, nil
	},
	"returns_params": func(_ *orch8test.TestTask, _ context.Context, t *orch8.Task) (any, error) { return t.Params, nil },
	"returns_null":   func(*orch8test.TestTask, context.Context, *orch8.Task) (any, error) { return nil, nil },
	"returns_non_json": func(*orch8test.TestTask, context.Context, *orch8.Task) (any, error) {
		return math.NaN(), nil
	},
	"returns_string_of": func(_ *orch8test.TestTask, _ context.Context, t *orch8.Task) (any, error) {
		return strings.Repeat("x", num(t, "bytes")), nil
	},
	"returns_nested": func(_ *orch8test.TestTask, _ context.Context, t *orch8.Task) (any, error) {
		v := []any{}
		for level := 1; level < num(t, "depth"); level++ {
			v = []any{v}
		}
		return v, nil
	},
	"raises_retryable": func(_ *orch8test.TestTask, _ context.Context, t *orch8.Task) (any, error) {
		return nil, &orch8.RetryableError{Err: errors.New(str(t, "message")), Code: str(t, "code"),
			After: time.Duration(num(t, "retry_after_ms")) * time.Millisecond, Checkpoint: obj(t, "checkpoint")}
	},
	"raises_permanent": func(_ *orch8test.TestTask, _ context.Context, t *orch8.Task) (any, error) {
		return nil, &orch8.PermanentError{Err: errors.New(str(t, "message")), Code: str(t, "code"),
			Details: obj(t, "details"), Checkpoint: obj(t, "checkpoint")}
	},
	"yields": func(_ *orch8test.TestTask, _ context.Context, t *orch8.Task) (any, error) {
		return nil, orch8.Yield(obj(t, "checkpoint"), time.Duration(num(t, "delay_ms"))*time.Millisecond)
	},
	"raises_unhandled": func(_ *orch8test.TestTask, _ context.Context, t *orch8.Task) (any, error) {
		return nil, errors.New(str(t, "message"))
	},
	"raises_huge_message": func(_ *orch8test.TestTask, _ context.Context, t *orch8.Task) (any, error) {
		return nil, orch8.Permanent(errors.New(strings.Repeat(str(t, "char"), num(t, "repeat"))))
	},
	"raises_huge_details": func(_ *orch8test.TestTask, _ context.Context, t *orch8.Task) (any, error) {
		return nil, &orch8.PermanentError{Err: errors.New("details too big"),
			Details: map[string]any{"blob": strings.Repeat("x", num(t, "bytes"))}}
	},
	"heartbeats": func(_ *orch8test.TestTask, ctx context.Context, t *orch8.Task) (any, error) {
		progress, _ := t.Params["progress"].([]any)
		for _, p := range progress {
			if err := t.Heartbeat(ctx, p, nil); err != nil {
				return nil, err
			}
		}
		return map[string]any{"sent": len(progress)}, nil
	},
	"saves_checkpoints": func(_ *orch8test.TestTask, ctx context.Context, t *orch8.Task) (any, error) {
		start := 0
		if page, ok := t.Checkpoint["page"].(float64); ok {
			start = int(page)
		}
		last := start + num(t, "pages")
		for page := start + 1; page <= last; page++ {
			if err := t.Heartbeat(ctx, page, map[string]any{"page": page}); err != nil {
				return nil, err
			}
		}
		return map[string]any{"first": start + 1, "last": last}, nil
	},
	"waits_for_signal": func(tt *orch8test.TestTask, ctx context.Context, t *orch8.Task) (any, error) {
		switch err := t.Heartbeat(ctx, "started", nil); {
		case errors.Is(err, orch8.ErrTaskCancelled):
			tt.Logger.Warn("heartbeat refused: task_cancelled")
		case errors.Is(err, orch8.ErrLeaseLost):
			tt.Logger.Warn("heartbeat refused: lease_lost")
		}
		select {
		case <-ctx.Done():
		case <-time.After(signalWait):
			return "never stopped", nil
		}
		reason := map[error]string{orch8.ErrTaskCancelled: "cancelled", orch8.ErrLeaseLost: "lease_lost",
			orch8.ErrShutdown: "shutdown"}[context.Cause(ctx)]
		tt.Logger.Info("stopped: " + reason)
		return "late result", nil
	},
}

func loadCases(t *testing.T) []kitCase {
	t.Helper()
	raw, err := os.ReadFile("../../conformance/kit-cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Cases []kitCase }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Cases
}

// options turns the table's task (snake_case, milliseconds) into Options.
func options(task map[string]any) orch8test.Options {
	var o orch8test.Options
	raw, _ := json.Marshal(task)
	var w struct {
		Params        map[string]any    `json:"params"`
		Context       map[string]any    `json:"context"`
		Headers       map[string]string `json:"headers"`
		Attempt       int               `json:"attempt"`
		MaxAttempts   int               `json:"max_attempts"`
		Checkpoint    map[string]any    `json:"checkpoint"`
		TaskID        string            `json:"task_id"`
		HandlerName   string            `json:"handler_name"`
		QueueName     string            `json:"queue_name"`
		WorkerID      string            `json:"worker_id"`
		GracePeriodMs int               `json:"grace_period_ms"`
		MaxBodyBytes  int               `json:"max_body_bytes"`
	}
	_ = json.Unmarshal(raw, &w)
	o.Params, o.Context, o.Headers, o.Checkpoint = w.Params, w.Context, w.Headers, w.Checkpoint
	o.Attempt, o.MaxAttempts, o.MaxBodyBytes = w.Attempt, w.MaxAttempts, w.MaxBodyBytes
	o.TaskID, o.HandlerName, o.QueueName, o.WorkerID = w.TaskID, w.HandlerName, w.QueueName, w.WorkerID
	o.GracePeriod = time.Duration(w.GracePeriodMs) * time.Millisecond
	return o
}

func runCase(t *testing.T, c kitCase) (*orch8test.TestTask, orch8test.Outcome) {
	t.Helper()
	h, ok := handlers[c.Handler]
	if !ok {
		t.Fatalf("no handler %s in the Go kit tests", c.Handler)
	}
	var tt *orch8test.TestTask
	fire := func() {
		for _, what := range []string{c.Trigger.Fire, c.Trigger.Then} {
			switch what {
			case "cancel":
				tt.Cancel()
			case "lose_lease":
				tt.LoseLease()
			case "shutdown":
				tt.Shutdown()
			}
		}
	}
	o := options(c.Task)
	beats := 0
	o.OnHeartbeat = func(orch8test.Heartbeat) {
		beats++
		if c.Trigger != nil && beats == c.Trigger.AtHeartbeat {
			fire()
		}
	}
	tt = orch8test.NewTestTask(o)
	if c.Trigger != nil && c.Trigger.AtHeartbeat == 0 {
		fire()
	}
	return tt, tt.Run(context.Background(), func(ctx context.Context, task *orch8.Task) (any, error) {
		return h(tt, ctx, task)
	})
}

// asJSON is v as the table holds it (numbers float64, absent as nil).
func asJSON(v any) any {
	raw, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

func check(c kitCase, tt *orch8test.TestTask, out orch8test.Outcome) []string {
	var bad []string
	got := map[string]any{"status": out.Status, "output": out.Output, "details": out.Details, "checkpoint": out.Checkpoint,
		"heartbeats": tt.Heartbeats(), "checkpoints": tt.Checkpoints(), "logs": tt.Logs()}
	// The zero values of Go's Outcome are what the table calls null.
	if out.Status == "failed" {
		got["error"], got["code"], got["retryable"] = out.Error, out.Code, out.Retryable
	}
	if out.RetryAfter > 0 {
		got["retry_after_ms"] = out.RetryAfter.Milliseconds()
	}
	if out.Status == "released" {
		got["delay_ms"] = out.Delay.Milliseconds()
	}
	for key, want := range c.Expect {
		switch key {
		case "error_endswith":
			if !strings.HasSuffix(out.Error, want.(string)) {
				bad = append(bad, key)
			}
		case "error_bytes":
			if len(out.Error) != int(want.(float64)) {
				bad = append(bad, key)
			}
		case "details_keys":
			keys := []string{}
			for k := range out.Details {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if !reflect.DeepEqual(asJSON(keys), want) {
				bad = append(bad, key)
			}
		case "details_subset":
			for k, v := range want.(map[string]any) {
				if !reflect.DeepEqual(asJSON(out.Details[k]), v) {
					bad = append(bad, key+"."+k)
				}
			}
		default:
			if g := asJSON(got[key]); !reflect.DeepEqual(g, want) {
				bad = append(bad, key+": got "+string(must(json.Marshal(g))))
			}
		}
	}
	return bad
}

func must(b []byte, _ error) []byte { return b }

func TestKitCases(t *testing.T) {
	for _, c := range loadCases(t) {
		t.Run(c.ID, func(t *testing.T) {
			tt, out := runCase(t, c)
			if bad := check(c, tt, out); len(bad) > 0 {
				t.Errorf("%s: %v (outcome %+v)", c.ID, bad, out)
			}
		})
	}
}

func TestEveryHandlerOfTheTableIsHere(t *testing.T) {
	names := map[string]bool{}
	for _, c := range loadCases(t) {
		names[c.Handler] = true
	}
	for name := range handlers {
		if !names[name] {
			t.Errorf("handler %s is in no case", name)
		}
	}
	for name := range names {
		if handlers[name] == nil {
			t.Errorf("no handler %s", name)
		}
	}
}

func TestABrokenExpectationFails(t *testing.T) {
	c := loadCases(t)[0]
	c.Expect = map[string]any{"status": "failed"}
	tt, out := runCase(t, c)
	if len(check(c, tt, out)) == 0 {
		t.Fatal("a wrong status passed the check")
	}
}
