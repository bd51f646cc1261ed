package orch8

// Unit tests of shutdown, quiet and handler-heartbeat rules (P-SDK-7, 17, 18, 19).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// P-SDK-17: StopNow (the second signal) ends the grace period at once, even when the
// handler ignores its cancellation; the task is failed with shutdown.
func TestSecondStopEndsGracePeriod(t *testing.T) {
	s, c := newScripted(t)
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", GracePeriod: time.Minute, PollWait: 50 * time.Millisecond})
	started := make(chan struct{})
	w.Handle("stubborn", func(ctx context.Context, t *Task) (any, error) {
		close(started)
		time.Sleep(time.Hour)
		return nil, nil
	})
	s.add("task_1", "stubborn")
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	<-started
	w.Stop()
	time.Sleep(100 * time.Millisecond) // inside the grace period
	begin := time.Now()
	w.StopNow()
	select {
	case <-done:
	case <-time.After(shutdownSlack + 2*time.Second):
		t.Fatal("Run did not return after the second stop")
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Fatalf("Run returned %v after the second stop", d)
	}
	if b := s.failBodies()["task_1"]; b["code"] != CodeShutdown || b["retryable"] != true {
		t.Fatalf("fail body %v", b)
	}
	if st := w.Stats(); st.TasksFailed != 1 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// P-SDK-18: Resume clears only the local flag; the operator's quiet still stops claiming.
func TestQuietPrecedence(t *testing.T) {
	s, c := newScripted(t)
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	s.mu.Lock()
	s.directive = "quiet"
	s.mu.Unlock()
	stop := runWorker(t, w)
	defer stop()
	waitUntil(t, "the operator quiet", func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.serverQuiet })
	// A poll the loop began before the quiet arrived may reach the server after it: two
	// more heartbeats from the same worker let it land before the polls are counted.
	beats := func() int { return len(s.sent("POST", "/workers/w1/heartbeat")) }
	seen := beats()
	waitUntil(t, "two heartbeats after the quiet", func() bool { return beats() >= seen+2 })
	w.Quiet()
	w.Resume()
	s.add("task_1", "echo")
	polls := len(s.sent("POST", "/poll/batch"))
	time.Sleep(300 * time.Millisecond) // several heartbeats (40 ms) still say quiet
	if n := len(s.sent("POST", "/poll/batch")); n != polls {
		t.Fatalf("%d polls while the operator said quiet", n-polls)
	}
	s.mu.Lock()
	s.directive = "running"
	s.mu.Unlock()
	waitUntil(t, "the task after the running directive", func() bool { return w.Stats().TasksCompleted == 1 })
}

// P-SDK-19: Task.Heartbeat answered 409 lease_lost cancels the handler and returns
// ErrLeaseLost; no result is sent for the task.
func TestHandlerHeartbeatLeaseLost(t *testing.T) {
	s, c := newScripted(t)
	s.taskHeartbeat = func(string) (int, string) { return 409, "lease_lost" }
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	got := make(chan [2]error, 1)
	w.Handle("beat", func(ctx context.Context, t *Task) (any, error) {
		err := t.Heartbeat(ctx, nil, map[string]any{"step": 1})
		got <- [2]error{err, context.Cause(ctx)}
		return "stale", nil
	})
	s.add("task_1", "beat")
	stop := runWorker(t, w)
	r := <-got
	waitUntil(t, "the run to end", func() bool { return w.Stats().InFlight == 0 })
	stop()
	if !errors.Is(r[0], ErrLeaseLost) || !errors.Is(r[1], ErrLeaseLost) {
		t.Fatalf("heartbeat error %v, ctx cause %v", r[0], r[1])
	}
	if n := len(s.batches()) + len(s.sent("POST", "/fail")); n != 0 {
		t.Fatalf("%d results sent after lease_lost", n)
	}
	if st := w.Stats(); st.TasksLeaseLost != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// P-SDK-19: a handler heartbeat sends lease_ms (the worker's LeaseDuration), never the
// deprecated extend_ms, with the checkpoint and progress.
func TestHandlerHeartbeatSendsLeaseMs(t *testing.T) {
	s, c := newScripted(t)
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond, LeaseDuration: 5 * time.Second})
	w.Handle("beat", func(ctx context.Context, t *Task) (any, error) {
		return "ok", t.Heartbeat(ctx, map[string]any{"pct": 50}, map[string]any{"page": 2})
	})
	s.add("task_1", "beat")
	stop := runWorker(t, w)
	waitUntil(t, "the completion", func() bool { return w.Stats().TasksCompleted == 1 })
	stop()
	hb := s.sent("POST", "/workers/tasks/task_1/heartbeat")
	if len(hb) != 1 {
		t.Fatalf("%d task heartbeats", len(hb))
	}
	b := hb[0].Body
	if b["lease_ms"] != float64(5000) || b["extend_ms"] != nil || b["lease_id"] != "lease_task_1" ||
		fmt.Sprint(b["checkpoint"]) != "map[page:2]" || fmt.Sprint(b["progress"]) != "map[pct:50]" {
		t.Fatalf("heartbeat body %v", b)
	}
}

// P-SDK-7, P-SDK-11: a handler that returns (on its cancelled ctx) while its shutdown
// fail is still being delivered counts as failed with "shutdown", not as lease lost.
func TestShutdownFailCountsWhenTheHandlerReturnsMeanwhile(t *testing.T) {
	s, c := newScripted(t)
	returned := make(chan struct{})
	s.result = func(path string, n int) int {
		if strings.HasSuffix(path, "/fail") {
			<-returned // the handler is back before the fail is answered
		}
		return 200
	}
	var fails []string
	var mu sync.Mutex
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", GracePeriod: 100 * time.Millisecond, PollWait: 50 * time.Millisecond,
		Hooks: Hooks{OnTaskFail: func(e TaskFailEvent) { mu.Lock(); fails = append(fails, e.Code); mu.Unlock() }}})
	started := make(chan struct{})
	w.Handle("slow", func(ctx context.Context, t *Task) (any, error) {
		close(started)
		<-ctx.Done()
		defer close(returned)
		return nil, ctx.Err()
	})
	s.add("task_1", "slow")
	stop := runWorker(t, w)
	<-started
	stop()
	st := w.Stats()
	mu.Lock()
	defer mu.Unlock()
	if st.TasksFailed != 1 || st.TasksLeaseLost != 0 || st.InFlight != 0 || fmt.Sprint(fails) != "[shutdown]" {
		t.Fatalf("stats %+v, fail hooks %v", st, fails)
	}
}
