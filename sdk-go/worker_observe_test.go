package orch8

// Unit tests of typed errors, identity and observability (P-SDK-11, 20, 21, 22).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// P-SDK-20: typed errors carry code, details and checkpoint.
func TestTypedErrorsCarryCheckpoint(t *testing.T) {
	rep := failureFor(&RetryableError{Err: errors.New("later"), After: 2 * time.Second, Code: "busy",
		Details: map[string]any{"k": 1}, Checkpoint: map[string]any{"page": 3}})
	if *rep.Code != "busy" || !*rep.Retryable || *rep.RetryAfterMs != 2000 || rep.Details["k"] != 1 || rep.Checkpoint["page"] != 3 {
		t.Fatalf("retryable report %+v", rep)
	}
	rep = failureFor(&PermanentError{Err: errors.New("bad"), Checkpoint: map[string]any{"page": 4}})
	if *rep.Code != CodePermanentError || *rep.Retryable || rep.Checkpoint["page"] != 4 {
		t.Fatalf("permanent report %+v", rep)
	}
}

// P-SDK-21: default worker id shape; registration sends queues ["default"] and labels {}.
func TestIdentityAndRegistration(t *testing.T) {
	if id := defaultWorkerID(); !regexp.MustCompile(`^.+-\d+-[0-9a-f]{8}$`).MatchString(id) {
		t.Fatalf("default worker id %q", id)
	}
	s, c := newScripted(t)
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	w.Handle("b", func(ctx context.Context, t *Task) (any, error) { return nil, nil })
	w.Handle("a", func(ctx context.Context, t *Task) (any, error) { return nil, nil })
	stop := runWorker(t, w)
	waitUntil(t, "a poll", func() bool { return len(s.sent("POST", "/poll/batch")) > 0 })
	stop()
	reg := s.sent("POST", "/workers")[0].Body
	labels, ok := reg["labels"].(map[string]any)
	if fmt.Sprint(reg["queues"]) != "[default]" || !ok || len(labels) != 0 || fmt.Sprint(reg["handlers"]) != "[a b]" ||
		reg["hostname"] == nil || reg["pid"] == nil || reg["concurrency"] != float64(10) || reg["sdk"] != "orch8-go/"+Version {
		t.Fatalf("registration %v", reg)
	}
}

// P-SDK-11: counters keep their invariant, hooks get their payloads, a panicking hook
// is ignored; P-SDK-22: completion and failure are logged at debug with id and attempt.
func TestStatsHooksAndLogs(t *testing.T) {
	s, c := newScripted(t)
	s.hbAnswer = func(id string) (bool, bool) { return id == "task_lost", false }
	var mu sync.Mutex
	events := map[string][]string{}
	note := func(kind, v string) { mu.Lock(); events[kind] = append(events[kind], v); mu.Unlock() }
	logs := &bytes.Buffer{}
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond, Logger: logger, Hooks: Hooks{
		OnPoll:      func(e PollEvent) { note("poll", fmt.Sprint(e.Claimed)); panic("hook bug") },
		OnTaskStart: func(e TaskStartEvent) { note("start", e.Task.ID) },
		OnTaskComplete: func(e TaskCompleteEvent) {
			note("complete", fmt.Sprintf("%s %v", e.Task.ID, e.Duration >= 20*time.Millisecond))
		},
		OnTaskFail:      func(e TaskFailEvent) { note("fail", fmt.Sprintf("%s %s %v", e.Task.ID, e.Code, e.Retryable)) },
		OnTaskAbandoned: func(e TaskAbandonedEvent) { note("abandoned", e.Task.ID+" "+e.Reason) },
	}})
	w.Handle("ok", func(ctx context.Context, t *Task) (any, error) { time.Sleep(20 * time.Millisecond); return "ok", nil })
	w.Handle("bad", func(ctx context.Context, t *Task) (any, error) { return nil, Permanent(errors.New("no")) })
	w.Handle("hold", func(ctx context.Context, t *Task) (any, error) { <-ctx.Done(); return nil, ctx.Err() })
	for _, id := range []string{"task_ok", "task_bad", "task_lost"} {
		s.add(id, strings.TrimPrefix(id, "task_"))
	}
	s.handler["task_lost"] = "hold"
	stop := runWorker(t, w)
	waitUntil(t, "three outcomes", func() bool { st := w.Stats(); return st.InFlight == 0 && st.TasksClaimed == 3 })
	stop()
	st := w.Stats()
	if st.TasksClaimed != st.TasksCompleted+st.TasksFailed+st.TasksLeaseLost+st.TasksCancelled+st.InFlight ||
		st.TasksCompleted != 1 || st.TasksFailed != 1 || st.TasksLeaseLost != 1 || st.Polls < 1 {
		t.Fatalf("stats %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(events["complete"]) != "[task_ok true]" || fmt.Sprint(events["fail"]) != "[task_bad permanent_error false]" ||
		fmt.Sprint(events["abandoned"]) != "[task_lost lease_lost]" || len(events["start"]) != 3 || len(events["poll"]) < 1 {
		t.Fatalf("hook events %v", events)
	}
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	// P-SDK-31: each line names its event; a hook's panic is logged with its cause.
	for _, want := range []string{
		`level=DEBUG msg="orch8: task completed" worker_id=w1 event=task_completed task_id=task_ok handler=ok attempt=1`,
		`level=DEBUG msg="orch8: task failed with permanent_error (permanent)" worker_id=w1 event=task_failed task_id=task_bad handler=bad attempt=1 code=permanent_error retryable=false`,
		`level=WARN msg="orch8: hook OnPoll panicked; ignored: string: hook bug" worker_id=w1 event=hook_error hook=OnPoll cause="string: hook bug"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// P-SDK-11, P-SDK-12: a worker heartbeat that says lease_lost while the task's completion
// is in flight does not win over the completion's own answer (our completion ended the
// lease); the task counts as completed, not lost.
func TestHeartbeatLeaseLostDuringDeliveryDefersToTheResult(t *testing.T) {
	s, c := newScripted(t)
	inFirst, releaseFirst := make(chan struct{}), make(chan struct{})
	s.batchHook = func(n int) {
		if n == 1 {
			close(inFirst)
			<-releaseFirst
		}
	}
	s.hbAnswer = func(id string) (bool, bool) { return true, false }
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	s.add("task_1", "echo")
	stop := runWorker(t, w)
	<-inFirst
	hb := len(s.sent("POST", "/workers/w1/heartbeat"))
	waitUntil(t, "two heartbeats during the delivery", func() bool { return len(s.sent("POST", "/workers/w1/heartbeat")) >= hb+2 })
	close(releaseFirst)
	waitUntil(t, "the outcome", func() bool { return w.Stats().InFlight == 0 })
	stop()
	if st := w.Stats(); st.TasksCompleted != 1 || st.TasksLeaseLost != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// P-SDK-11: a completion or failure hook already sees the outcome in Stats.
func TestHooksSeeCurrentStats(t *testing.T) {
	s, c := newScripted(t)
	var mu sync.Mutex
	var seen []Stats
	var w *Worker
	w = mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond, Hooks: Hooks{
		OnTaskComplete: func(TaskCompleteEvent) { mu.Lock(); seen = append(seen, w.Stats()); mu.Unlock() },
		OnTaskFail:     func(TaskFailEvent) { mu.Lock(); seen = append(seen, w.Stats()); mu.Unlock() },
	}})
	w.Handle("ok", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	w.Handle("bad", func(ctx context.Context, t *Task) (any, error) { return nil, Permanent(errors.New("no")) })
	s.add("task_ok", "ok")
	stop := runWorker(t, w)
	waitUntil(t, "the completion", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 1 })
	s.add("task_bad", "bad")
	waitUntil(t, "the failure", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 2 })
	stop()
	if a, b := seen[0], seen[1]; a.TasksCompleted != 1 || a.InFlight != 0 || b.TasksFailed != 1 || b.InFlight != 0 {
		t.Fatalf("stats seen by the hooks: %+v then %+v", a, b)
	}
}

// P-SDK-11: an outcome hook that runs after its task left the drain (the count comes first)
// has returned before Run does; none fires after Run returned.
func TestRunReturnsAfterItsOutcomeHooks(t *testing.T) {
	s, c := newScripted(t)
	var mu sync.Mutex
	var seen []string
	slow := func(id string) {
		time.Sleep(300 * time.Millisecond) // past the drain, which the release already ended
		mu.Lock()
		seen = append(seen, id)
		mu.Unlock()
	}
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond, Hooks: Hooks{
		OnTaskComplete: func(e TaskCompleteEvent) { slow(e.Task.ID) },
		OnTaskFail:     func(e TaskFailEvent) { slow(e.Task.ID) },
	}})
	w.Handle("ok", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	w.Handle("bad", func(ctx context.Context, t *Task) (any, error) { return nil, Permanent(errors.New("no")) })
	s.add("task_ok", "ok")
	s.add("task_bad", "bad")
	stop := runWorker(t, w)
	waitUntil(t, "both settled", func() bool { st := w.Stats(); return st.TasksCompleted+st.TasksFailed == 2 })
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("Run returned with outcome hooks still running: %v", seen)
	}
}
