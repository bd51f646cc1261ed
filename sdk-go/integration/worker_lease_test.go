package integration_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

func TestHandlerOutlivesLeaseThroughWorkerHeartbeats(t *testing.T) {
	t.Parallel()
	s := startServer(t) // heartbeat cadence 300 ms
	c := newClient(t, s, nil)
	w := startWorker(t, c, orch8.WorkerOptions{LeaseDuration: 700 * time.Millisecond}, map[string]orch8.Handler{
		"slow": func(ctx context.Context, task *orch8.Task) (any, error) {
			select {
			case <-time.After(2 * time.Second): // about three lease lengths
				return "finished", nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		},
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "slow"})
	rec := waitStatus(t, c, id, orch8.StatusCompleted, 10*time.Second)
	if rec.Attempt != 1 || rec.Output != "finished" {
		t.Fatalf("attempt %d output %v", rec.Attempt, rec.Output)
	}
	if st := w.Stats(); st.TasksLeaseLost != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// The lease is taken away by a second client releasing the task (no lease_id: it acts on
// the current lease, P-LEASE-4); the worker learns it from its next heartbeat.
func TestLeaseLossCancelsHandlerAndSendsNoStaleResult(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	rec := &recorder{}
	c := newClient(t, s, rec)
	operator := newClient(t, s, nil)
	started := make(chan *orch8.Task, 2)
	var cause atomic.Value
	var calls atomic.Int32
	w := startWorker(t, c, orch8.WorkerOptions{Concurrency: 1}, map[string]orch8.Handler{
		"blocker": func(ctx context.Context, task *orch8.Task) (any, error) {
			if calls.Add(1) > 1 {
				return "fresh", nil
			}
			started <- task
			<-ctx.Done()
			cause.Store(context.Cause(ctx))
			return "stale", nil // must never reach the server
		},
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "blocker"})
	first := <-started
	if _, err := operator.ReleaseTask(context.Background(), id, orch8.TaskRelease{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "handler cancellation", func() bool { return cause.Load() != nil })
	if got := cause.Load().(error); !errors.Is(got, orch8.ErrLeaseLost) {
		t.Fatalf("cause %v", got)
	}
	done := waitStatus(t, c, id, orch8.StatusCompleted, 10*time.Second)
	if done.Output != "fresh" {
		t.Fatalf("output %v", done.Output)
	}
	if len(rec.completionsFor(id)) == 0 {
		t.Fatal("the fresh attempt's completion was not reported through the batch endpoint")
	}
	for _, item := range rec.completionsFor(id) {
		if item["lease_id"] == first.LeaseID {
			t.Fatalf("a result was sent for the lost lease %s", first.LeaseID)
		}
	}
	// The server stores the result before the worker hears back: wait for the counter.
	waitFor(t, 5*time.Second, "the completion to be counted", func() bool { return w.Stats().TasksCompleted == 1 })
	if st := w.Stats(); st.TasksLeaseLost != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestOperatorCancelReachesHandler(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	rec := &recorder{}
	c := newClient(t, s, rec)
	started := make(chan struct{}, 1)
	var cause atomic.Value
	w := startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"long": func(ctx context.Context, task *orch8.Task) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			cause.Store(context.Cause(ctx))
			return nil, errors.New("stopped")
		},
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "long"})
	<-started
	if _, err := c.CancelTask(context.Background(), id, orch8.TaskCancellation{Reason: orch8.Ptr("customer withdrew")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "handler cancellation", func() bool { return cause.Load() != nil })
	if got := cause.Load().(error); !errors.Is(got, orch8.ErrTaskCancelled) {
		t.Fatalf("cause %v", got)
	}
	waitFor(t, 5*time.Second, "the run to end", func() bool { return w.Stats().InFlight == 0 })
	if n := len(rec.sent("POST", "/workers/tasks/"+id+"/fail")) + len(rec.sent("POST", "/workers/tasks/"+id+"/complete")) + len(rec.completionsFor(id)); n != 0 {
		t.Fatalf("%d results sent for a cancelled task", n)
	}
	if got := getTask(t, c, id); got.Status != orch8.StatusCancelled {
		t.Fatalf("status %s", got.Status)
	}
	if st := w.Stats(); st.TasksCancelled != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// P-MANUAL-1: an operator completing a running task by hand takes the lease away.
func TestManualCompletionStopsTheRunningHandler(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	rec := &recorder{}
	c := newClient(t, s, rec)
	started := make(chan struct{}, 1)
	var cause atomic.Value
	w := startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"approval": func(ctx context.Context, task *orch8.Task) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			cause.Store(context.Cause(ctx))
			return "worker result", nil
		},
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "approval"})
	<-started
	if _, err := c.CompleteTaskManually(context.Background(), id, orch8.ManualCompletion{Output: "approved by hand"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "handler cancellation", func() bool { return cause.Load() != nil })
	if got := cause.Load().(error); !errors.Is(got, orch8.ErrLeaseLost) {
		t.Fatalf("cause %v", got)
	}
	waitFor(t, 5*time.Second, "the run to end", func() bool { return w.Stats().InFlight == 0 })
	if n := len(rec.sent("POST", "/workers/tasks/"+id+"/complete")) + len(rec.completionsFor(id)); n != 0 {
		t.Fatalf("worker sent %d results after the manual completion", n)
	}
	if got := getTask(t, c, id); got.Status != orch8.StatusCompleted || got.Output != "approved by hand" {
		t.Fatalf("status %s output %v", got.Status, got.Output)
	}
}
