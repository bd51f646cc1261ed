package integration_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

func TestHappyPath(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"echo": func(ctx context.Context, task *orch8.Task) (any, error) {
			return map[string]any{"echo": task.Params["n"], "step": task.Context["step"]}, nil
		},
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "echo", Params: orch8.JSONObject{"n": 7}, Context: orch8.JSONObject{"step": "a"}})
	rec := waitStatus(t, c, id, orch8.StatusCompleted, 10*time.Second)
	out, _ := rec.Output.(map[string]any)
	if out["echo"] != float64(7) || out["step"] != "a" || rec.Attempt != 1 {
		t.Fatalf("output %v attempt %d", rec.Output, rec.Attempt)
	}
}

func TestRetryableFailureThenSuccess(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"flaky": func(ctx context.Context, task *orch8.Task) (any, error) {
			if task.Attempt == 1 {
				return nil, orch8.Retryable(errors.New("upstream timed out"), 50*time.Millisecond)
			}
			return "ok", nil
		},
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "flaky", Retry: retry(3, 5000)})
	rec := waitStatus(t, c, id, orch8.StatusCompleted, 10*time.Second)
	if rec.Attempt != 2 || rec.Output != "ok" {
		t.Fatalf("attempt %d output %v", rec.Attempt, rec.Output)
	}
	atts, err := c.ListTaskAttempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	first := atts.Attempts[0]
	if len(atts.Attempts) != 2 || first.Error == nil || first.Error.Code != orch8.CodeRetryableError || !first.Error.Retryable {
		t.Fatalf("attempts %+v", atts.Attempts)
	}
}

func TestPermanentFailure(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"bad_input": func(ctx context.Context, task *orch8.Task) (any, error) {
			return nil, orch8.Permanent(errors.New("image is not a PNG"))
		},
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "bad_input"})
	rec := waitStatus(t, c, id, orch8.StatusFailed, 10*time.Second)
	if rec.Attempt != 1 || rec.Error == nil || rec.Error.Code != orch8.CodePermanentError || rec.Error.Retryable ||
		rec.Error.Message != "image is not a PNG" {
		t.Fatalf("attempt %d error %+v", rec.Attempt, rec.Error)
	}
}

func TestUnhandledErrorAndPanicAreRetryable(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"plain_error": func(ctx context.Context, task *orch8.Task) (any, error) { return nil, errors.New("oops") },
		"panics":      func(ctx context.Context, task *orch8.Task) (any, error) { panic("kaboom") },
	})
	for _, h := range []string{"plain_error", "panics"} {
		id := enqueue(t, c, orch8.NewTask{HandlerName: h, Retry: retry(2, 10)})
		rec := waitStatus(t, c, id, orch8.StatusFailed, 10*time.Second)
		if rec.Attempt != 2 || rec.Error == nil || rec.Error.Code != orch8.CodeUnhandledError || !rec.Error.Retryable {
			t.Fatalf("%s: attempt %d error %+v", h, rec.Attempt, rec.Error)
		}
	}
}

func TestCheckpointReachesNextAttempt(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	var seen atomic.Value
	startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"resumable": func(ctx context.Context, task *orch8.Task) (any, error) {
			if task.Attempt == 1 {
				if err := task.Heartbeat(ctx, map[string]any{"percent": 40}, map[string]any{"cursor": 4000}); err != nil {
					return nil, err
				}
				return nil, orch8.Retryable(errors.New("interrupted"), time.Millisecond)
			}
			seen.Store(task.Checkpoint)
			return "done", nil
		},
	})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "resumable"})
	waitStatus(t, c, id, orch8.StatusCompleted, 10*time.Second)
	cp, _ := seen.Load().(map[string]any)
	if cp["cursor"] != float64(4000) {
		t.Fatalf("second attempt saw checkpoint %v", cp)
	}
}

func TestConcurrencyNeverExceeded(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	rec := &recorder{}
	c := newClient(t, s, rec)
	var current, peak atomic.Int32
	w := startWorker(t, c, orch8.WorkerOptions{Concurrency: 3}, map[string]orch8.Handler{
		"work": func(ctx context.Context, task *orch8.Task) (any, error) {
			n := current.Add(1)
			defer current.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(150 * time.Millisecond)
			return nil, nil
		},
	})
	var ids []string
	for i := 0; i < 12; i++ {
		ids = append(ids, enqueue(t, c, orch8.NewTask{HandlerName: "work"}))
	}
	for _, id := range ids {
		waitStatus(t, c, id, orch8.StatusCompleted, 20*time.Second)
	}
	if p := peak.Load(); p != 3 {
		t.Fatalf("peak concurrent handlers %d, want exactly 3", p)
	}
	for _, p := range rec.sent("POST", "/workers/tasks/poll/batch") {
		if bs, _ := p.Body["batch_size"].(float64); bs < 1 || bs > 3 {
			t.Fatalf("polled with batch_size %v", p.Body["batch_size"])
		}
	}
	waitFor(t, 5*time.Second, "completions to be counted", func() bool {
		st := w.Stats()
		return st.TasksCompleted == 12 && st.InFlight == 0
	})
	if st := w.Stats(); st.TasksClaimed != 12 {
		t.Fatalf("stats %+v", st)
	}
}

// P-SDK-13 (issue 13's measure): a worker with concurrency 150 drains 1,000 tasks and never
// sends a poll the server rejects (batch_size stays <= 100).
func TestConcurrency150Drains1000Tasks(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--lease-ms", "30000")
	rec := &recorder{}
	c := newClient(t, s, rec)
	var pollErrors atomic.Int64
	w := startWorker(t, c, orch8.WorkerOptions{Concurrency: 150, Hooks: orch8.Hooks{OnError: func(e orch8.ErrorEvent) {
		if e.Operation == orch8.OpPoll {
			pollErrors.Add(1)
			t.Errorf("poll failed: %v", e.Err)
		}
	}}}, map[string]orch8.Handler{
		"drain": func(ctx context.Context, task *orch8.Task) (any, error) {
			time.Sleep(5 * time.Millisecond)
			return task.Params["n"], nil
		},
	})
	begin := time.Now()
	var ids []string
	for b := 0; b < 10; b++ {
		batch := orch8.NewTaskBatch{}
		for i := 0; i < 100; i++ {
			batch.Tasks = append(batch.Tasks, orch8.NewTask{HandlerName: "drain", Params: orch8.JSONObject{"n": b*100 + i}})
		}
		res, err := c.EnqueueBatch(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range res.Tasks {
			ids = append(ids, task.ID)
		}
	}
	waitFor(t, 120*time.Second, "1,000 completions", func() bool { return w.Stats().TasksCompleted == 1000 })
	if n := completedCount(t, c); n != 1000 {
		t.Fatalf("%d tasks completed on the server, want 1000", n)
	}
	t.Logf("1,000 tasks drained in %v by one worker at concurrency 150", time.Since(begin).Round(time.Millisecond))
	polls := rec.sent("POST", "/workers/tasks/poll/batch")
	for _, p := range polls {
		if n, _ := p.Body["batch_size"].(float64); n < 1 || n > 100 {
			t.Fatalf("a poll asked for batch_size %v", p.Body["batch_size"])
		}
	}
	if pollErrors.Load() != 0 || len(polls) == 0 {
		t.Fatalf("%d poll errors in %d polls", pollErrors.Load(), len(polls))
	}
	if got := getTask(t, c, ids[999]); got.Output != float64(999) {
		t.Fatalf("last task output %v", got.Output)
	}
}

// completedCount counts the server's completed tasks, page by page.
func completedCount(t *testing.T, c *orch8.Client) int {
	t.Helper()
	n := 0
	var cursor *string
	for {
		page, err := c.ListTasks(context.Background(), &orch8.ListTasksParams{Status: []orch8.TaskStatus{orch8.StatusCompleted}, Limit: orch8.Ptr(500), Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Tasks)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return n
		}
		cursor = page.NextCursor
	}
}
