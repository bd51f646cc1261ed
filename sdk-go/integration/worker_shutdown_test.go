package integration_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

func TestGracefulShutdownFinishesInFlightTask(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	started := make(chan struct{}, 1)
	w := startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"finish_me": func(ctx context.Context, task *orch8.Task) (any, error) {
			started <- struct{}{}
			time.Sleep(700 * time.Millisecond) // deliberately ignores ctx: it is not cancelled by shutdown
			return "finished", nil
		},
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "finish_me"})
	<-started
	took := w.shutdown(t, 10*time.Second)
	// Run returned: the result must already be stored, not merely sent later.
	if rec := getTask(t, c, id); rec.Status != orch8.StatusCompleted || rec.Output != "finished" {
		t.Fatalf("after Run returned: status %s output %v", rec.Status, rec.Output)
	}
	// The 30 s long-poll was aborted at once: shutdown took about the handler's rest.
	if took > 5*time.Second {
		t.Fatalf("shutdown took %v", took)
	}
	if _, err := c.GetWorker(context.Background(), w.ID()); !errors.Is(err, orch8.ErrNotFound) {
		if rec, err2 := c.GetWorker(context.Background(), w.ID()); err2 != nil || rec.State != "deregistered" {
			t.Fatalf("worker not deregistered: %v %v", err, rec)
		}
	}
}

func TestGracePeriodExceededFailsLeftoverWithShutdown(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var cause atomic.Value
	w := startWorker(t, c, orch8.WorkerOptions{GracePeriod: 500 * time.Millisecond}, map[string]orch8.Handler{
		"stubborn": func(ctx context.Context, task *orch8.Task) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			cause.Store(context.Cause(ctx))
			<-release // outlives even its cancellation: its late result must be ignored
			return "late", nil
		},
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "stubborn", Retry: retry(3, 60000)})
	<-started
	took := w.shutdown(t, 10*time.Second)
	if took < 500*time.Millisecond || took > 5*time.Second {
		t.Fatalf("shutdown took %v, want the 500 ms grace period and little more", took)
	}
	if got, _ := cause.Load().(error); !errors.Is(got, orch8.ErrShutdown) {
		t.Fatalf("handler cancellation cause %v", got)
	}
	rec := getTask(t, c, id)
	if rec.Status == orch8.StatusCompleted || rec.Error == nil || rec.Error.Code != orch8.CodeShutdown || !rec.Error.Retryable {
		t.Fatalf("status %s error %+v", rec.Status, rec.Error)
	}
	// P-SDK-29: the stored message says why the handler was still running.
	if want := "worker " + w.ID() + " shut down: grace period of 500 ms ended"; rec.Error.Message != want {
		t.Fatalf("message %q, want %q", rec.Error.Message, want)
	}
	atts, err := c.ListTaskAttempts(context.Background(), id)
	if err != nil || len(atts.Attempts) != 1 || atts.Attempts[0].Outcome != "failed" {
		t.Fatalf("attempts %+v %v", atts, err)
	}
}

func TestQuietAndResumeDirectives(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	var ran atomic.Int32
	w := startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"echo": func(ctx context.Context, task *orch8.Task) (any, error) { ran.Add(1); return "ok", nil },
	})
	waitFor(t, 5*time.Second, "registration", func() bool {
		_, err := c.GetWorker(context.Background(), w.ID())
		return err == nil
	})
	if _, err := c.QuietWorker(context.Background(), w.ID()); err != nil {
		t.Fatal(err)
	}
	// The worker reports state quiet in its heartbeat once it obeyed the directive.
	waitFor(t, 5*time.Second, "worker state quiet", func() bool {
		rec, err := c.GetWorker(context.Background(), w.ID())
		return err == nil && rec.State == "quiet"
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "echo"})
	deadline := time.Now().Add(1 * time.Second)
	for time.Now().Before(deadline) { // a quiet worker must not claim it
		if rec := getTask(t, c, id); rec.Status != orch8.StatusPending {
			t.Fatalf("quiet worker claimed a task: status %s", rec.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.ResumeWorker(context.Background(), w.ID()); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, id, orch8.StatusCompleted, 5*time.Second)
	if ran.Load() != 1 {
		t.Fatalf("handler ran %d times", ran.Load())
	}
}

func TestLocalQuietAndResume(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	w := startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"echo": func(ctx context.Context, task *orch8.Task) (any, error) { return "ok", nil },
	})
	w.Quiet() // what SIGTSTP does through RunWithSignals
	waitFor(t, 5*time.Second, "worker state quiet", func() bool {
		rec, err := c.GetWorker(context.Background(), w.ID())
		return err == nil && rec.State == "quiet"
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "echo"})
	deadline := time.Now().Add(700 * time.Millisecond)
	for time.Now().Before(deadline) {
		if rec := getTask(t, c, id); rec.Status != orch8.StatusPending {
			t.Fatalf("quiet worker claimed a task: status %s", rec.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.Resume() // SIGCONT
	waitStatus(t, c, id, orch8.StatusCompleted, 5*time.Second)
}

func TestTerminateDirectiveStopsRun(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	started := make(chan struct{}, 1)
	w := startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"finish_me": func(ctx context.Context, task *orch8.Task) (any, error) {
			started <- struct{}{}
			time.Sleep(300 * time.Millisecond)
			return "finished", nil
		},
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "finish_me"})
	<-started
	start := time.Now()
	if _, err := c.TerminateWorker(context.Background(), w.ID()); err != nil {
		t.Fatal(err)
	}
	w.wait(t, 10*time.Second, start) // Run returns by itself, without ctx being cancelled
	if rec := getTask(t, c, id); rec.Status != orch8.StatusCompleted {
		t.Fatalf("in-flight task after terminate: %s", rec.Status)
	}
}

func TestServerRestartMidRun(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--lease-ms", "15000")
	c := newClient(t, s, nil)
	// 8 tasks, 10 slots: handlers are busy while free slots keep polling into the outage.
	w := startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"work": func(ctx context.Context, task *orch8.Task) (any, error) {
			time.Sleep(400 * time.Millisecond)
			return task.Params["i"], nil
		},
	})
	var ids []string
	for i := 0; i < 8; i++ {
		ids = append(ids, enqueue(t, c, orch8.NewTask{HandlerName: "work", Params: orch8.JSONObject{"i": i}}))
	}
	waitFor(t, 10*time.Second, "work in flight", func() bool { return w.Stats().InFlight > 0 })
	s.stop() // mid-run: handlers are busy, results and polls now fail
	waitFor(t, 10*time.Second, "the worker to notice the outage", func() bool { return w.Stats().PollErrors > 0 })
	s.start() // same port, same SQLite file
	for i := 8; i < 12; i++ {
		ids = append(ids, enqueue(t, c, orch8.NewTask{HandlerName: "work", Params: orch8.JSONObject{"i": i}}))
	}
	for i, id := range ids {
		rec := waitStatus(t, c, id, orch8.StatusCompleted, 40*time.Second)
		if rec.Output != float64(i) {
			t.Fatalf("task %d output %v", i, rec.Output)
		}
	}
}
