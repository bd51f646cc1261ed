package orch8otel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/internal/refserver"
	"github.com/orch8/orch8-workers/sdk-go/orch8otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// point is one data point of any instrument kind: its attributes and its count (a
// histogram's number of recordings) or value (a sum or gauge).
type point struct {
	attrs attribute.Set
	n     float64
}

// instrument finds the instrument named name on the meter "orch8" and checks its unit.
func instrument(t *testing.T, rm metricdata.ResourceMetrics, name, unit string) []point {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != orch8otel.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if m.Unit != unit {
				t.Errorf("%s: unit %q, want %q", name, m.Unit, unit)
			}
			var out []point
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out = append(out, point{p.Attributes, float64(p.Count)})
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out = append(out, point{p.Attributes, float64(p.Value)})
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out = append(out, point{p.Attributes, float64(p.Value)})
				}
			default:
				t.Fatalf("%s: unexpected data %T", name, m.Data)
			}
			return out
		}
	}
	return nil
}

// total sums the points whose attributes include every one of want.
func total(points []point, want ...attribute.KeyValue) float64 {
	var n float64
	for _, p := range points {
		ok := true
		for _, kv := range want {
			if v, has := p.attrs.Value(kv.Key); !has || v != kv.Value {
				ok = false
			}
		}
		if ok {
			n += p.n
		}
	}
	return n
}

func keys(p point) []string {
	var ks []string
	for _, kv := range p.attrs.ToSlice() {
		ks = append(ks, string(kv.Key))
	}
	return ks
}

var (
	queueDefault = orch8otel.AttrDestinationName.String("default")
	handlerOK    = orch8otel.AttrHandler.String("ok_task")
	handlerBad   = orch8otel.AttrHandler.String("bad_task")
	handlerLost  = orch8otel.AttrHandler.String("lost_task")
)

// TestWorkerMetricsMoveByExactCounts_P_TEL_4: after N completions, M failures and one
// lease loss, every instrument of P-TEL-4 moved by exactly those counts, by attributes.
func TestWorkerMetricsMoveByExactCounts_P_TEL_4(t *testing.T) {
	t.Parallel()
	// Concurrency 1: the released task must not be claimed again while its first run is
	// still held (the worker keys held runs by task id).
	const n, m, concurrency = 4, 3, 1
	srv := refserver.Start(t)
	env := newOtelEnv(t)
	c := newClient(t, srv, nil) // the producer is untraced: only the worker's metrics count here
	var withReadyAt atomic.Int32
	var lostCalls atomic.Int32
	lostStarted := make(chan struct{})
	note := func(task *orch8.Task) {
		if !task.Claimed.ReadyAt.IsZero() { // servers before contract 1.3.0 leave it out
			withReadyAt.Add(1)
		}
	}
	w := startWorker(t, c, orch8.WorkerOptions{Telemetry: env.tel, Concurrency: concurrency}, map[string]orch8.Handler{
		"ok_task": func(ctx context.Context, task *orch8.Task) (any, error) { note(task); return "done", nil },
		"bad_task": func(ctx context.Context, task *orch8.Task) (any, error) {
			note(task)
			return nil, &orch8.PermanentError{Err: errors.New("refused"), Code: "refused"}
		},
		"lost_task": func(ctx context.Context, task *orch8.Task) (any, error) {
			note(task)
			if lostCalls.Add(1) == 1 {
				close(lostStarted)
				<-ctx.Done() // the operator releases the task: the lease is lost
			}
			return "again", nil
		},
	})
	lost, err := c.Enqueue(context.Background(), orch8.NewTask{HandlerName: "lost_task"})
	if err != nil {
		t.Fatal(err)
	}
	<-lostStarted
	if _, err := c.ReleaseTask(context.Background(), lost.ID, orch8.TaskRelease{}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < n+m; i++ {
		h := "ok_task"
		if i >= n {
			h = "bad_task"
		}
		rec, err := c.Enqueue(context.Background(), orch8.NewTask{HandlerName: h})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	for i, id := range ids {
		want := orch8.StatusCompleted
		if i >= n {
			want = orch8.StatusFailed
		}
		waitStatus(t, c, id, want)
	}
	waitStatus(t, c, lost.ID, orch8.StatusCompleted)
	// Results are stored before the worker hears back; heartbeats come every 300 ms.
	waitFor(t, 10*time.Second, "every outcome counted and a heartbeat", func() bool {
		st := w.Stats()
		hb := instrument(t, env.metrics(t), orch8otel.MetricHeartbeats, "{heartbeat}")
		return st.TasksCompleted == n+1 && st.TasksFailed == m && st.TasksLeaseLost == 1 && st.InFlight == 0 &&
			total(hb, orch8otel.AttrOutcome.String("ok")) >= 1
	})
	rm := env.metrics(t)

	dur := instrument(t, rm, orch8otel.MetricTaskDuration, "s")
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"ok_task completed", total(dur, queueDefault, handlerOK, orch8otel.AttrOutcome.String("completed")), n},
		{"bad_task failed", total(dur, queueDefault, handlerBad, orch8otel.AttrOutcome.String("failed")), m},
		{"lost_task lease_lost", total(dur, queueDefault, handlerLost, orch8otel.AttrOutcome.String("lease_lost")), 1},
		{"lost_task completed", total(dur, queueDefault, handlerLost, orch8otel.AttrOutcome.String("completed")), 1},
		{"all", total(dur), n + m + 2},
	} {
		if c.got != c.want {
			t.Errorf("%s duration: %v recordings, want %v", c.name, c.got, c.want)
		}
	}
	t.Logf("claims with ready_at: %d", withReadyAt.Load())
	if s2s := instrument(t, rm, orch8otel.MetricScheduleToStart, "s"); total(s2s) != float64(withReadyAt.Load()) {
		t.Errorf("schedule_to_start: %v recordings, want one per claim with ready_at: %d", total(s2s), withReadyAt.Load())
	}
	completed := instrument(t, rm, orch8otel.MetricTasksCompleted, "{task}")
	if got := total(completed, queueDefault, handlerOK); got != n || total(completed) != n+1 {
		t.Errorf("completed: ok_task %v, all %v; want %d and %d", got, total(completed), n, n+1)
	}
	failed := instrument(t, rm, orch8otel.MetricTasksFailed, "{task}")
	if got := total(failed, queueDefault, handlerBad, orch8otel.AttrErrorType.String("refused")); got != m || total(failed) != m {
		t.Errorf("failed: bad_task/refused %v, all %v; want %d", got, total(failed), m)
	}
	if ll := instrument(t, rm, orch8otel.MetricLeaseLosses, "{task}"); total(ll, queueDefault, handlerLost) != 1 || total(ll) != 1 {
		t.Errorf("lease_losses: %v, want 1 for lost_task", ll)
	}
	polls := instrument(t, rm, orch8otel.MetricPolls, "{poll}")
	claimed := total(polls, orch8otel.AttrOutcome.String("claimed"))
	if claimed < 1 || claimed > n+m+2 || total(polls, orch8otel.AttrOutcome.String("error")) != 0 {
		t.Errorf("polls: %v; want 1..%d claimed and no error", polls, n+m+2)
	}
	for _, p := range polls {
		if ks := keys(p); len(ks) != 1 || ks[0] != "orch8.outcome" {
			t.Errorf("a poll point has attributes %v, want only orch8.outcome", ks)
		}
	}
	if inFlight := instrument(t, rm, orch8otel.MetricTasksInFlight, "{task}"); len(inFlight) != 1 || inFlight[0].n != 0 || inFlight[0].attrs.Len() != 0 {
		t.Errorf("in_flight %v, want one point at 0 without attributes", inFlight)
	}
	if free := instrument(t, rm, orch8otel.MetricSlotsFree, "{slot}"); len(free) != 1 || free[0].n != concurrency {
		t.Errorf("slots.free %v, want %d", free, concurrency)
	}
}

// TestPollErrorsAndHeartbeatErrorsCounted_P_TEL_4: with the server gone, polls and
// heartbeats count as outcome error.
func TestPollErrorsAndHeartbeatErrorsCounted_P_TEL_4(t *testing.T) {
	t.Parallel()
	srv := refserver.Start(t)
	env := newOtelEnv(t)
	c := newClient(t, srv, env.tel) // the worker takes the client's telemetry
	startWorker(t, c, orch8.WorkerOptions{PollWait: 200 * time.Millisecond}, map[string]orch8.Handler{
		"idle": func(ctx context.Context, task *orch8.Task) (any, error) { return nil, nil },
	})
	waitFor(t, 10*time.Second, "the free-slots gauge before any claim", func() bool {
		free := instrument(t, env.metrics(t), orch8otel.MetricSlotsFree, "{slot}")
		return len(free) == 1 && free[0].n == orch8.DefaultConcurrency
	})
	waitFor(t, 10*time.Second, "an empty poll and a heartbeat", func() bool {
		rm := env.metrics(t)
		return total(instrument(t, rm, orch8otel.MetricPolls, "{poll}"), orch8otel.AttrOutcome.String("empty")) >= 1 &&
			total(instrument(t, rm, orch8otel.MetricHeartbeats, "{heartbeat}"), orch8otel.AttrOutcome.String("ok")) >= 1
	})
	srv.Stop()
	defer srv.Start() // so the worker can deregister
	waitFor(t, 15*time.Second, "a failed poll and a failed heartbeat", func() bool {
		rm := env.metrics(t)
		return total(instrument(t, rm, orch8otel.MetricPolls, "{poll}"), orch8otel.AttrOutcome.String("error")) >= 1 &&
			total(instrument(t, rm, orch8otel.MetricHeartbeats, "{heartbeat}"), orch8otel.AttrOutcome.String("error")) >= 1
	})
}
