package orch8

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Unit tests of the parity rules of docs/protocol.md section 14 (P-SDK-11, 13..22), one
// or more per rule, against the scripted HTTP layer.

func keys(v any) []string {
	m, _ := v.(map[string]any)
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// failBodies maps task id -> the body of its single fail report.
func (s *scripted) failBodies() map[string]map[string]any {
	got := map[string]map[string]any{}
	for _, r := range s.sent("POST", "/fail") {
		got[strings.Split(r.Path, "/")[3]] = r.Body
	}
	return got
}

// P-SDK-13: with 150 free slots a poll asks for 100; with 120 handlers the names go in
// chunks of at most 50 and every chunk is polled; the server never refuses a poll.
func TestPollLimitsBatchSizeAndHandlerChunks(t *testing.T) {
	s, c := newScripted(t)
	w := NewWorker(c, WorkerOptions{WorkerID: "w1", Concurrency: 150, PollWait: 50 * time.Millisecond})
	for i := range 120 {
		w.Handle(fmt.Sprintf("h%03d", i), func(ctx context.Context, t *Task) (any, error) { return nil, nil })
	}
	stop := runWorker(t, w)
	seen := map[string]bool{}
	waitUntil(t, "every handler polled", func() bool {
		for _, r := range s.sent("POST", "/poll/batch") {
			names, _ := r.Body["handler_names"].([]any)
			for _, n := range names {
				seen[n.(string)] = true
			}
		}
		return len(seen) == 120
	})
	stop()
	s.mu.Lock()
	rejected := s.rejectedPolls
	s.mu.Unlock()
	if rejected != 0 {
		t.Fatalf("%d polls were too large for the server", rejected)
	}
	for _, r := range s.sent("POST", "/poll/batch") {
		if r.Body["batch_size"] != float64(100) {
			t.Fatalf("batch_size %v with 150 free slots, want 100", r.Body["batch_size"])
		}
	}
}

func TestHandlerChunks(t *testing.T) {
	names := make([]string, 101)
	for i := range names {
		names[i] = fmt.Sprint(i)
	}
	var sizes []int
	for _, c := range handlerChunks(names) {
		sizes = append(sizes, len(c))
	}
	if fmt.Sprint(sizes) != "[50 50 1]" {
		t.Fatalf("chunk sizes %v", sizes)
	}
	if got := handlerChunks([]string{"a"}); len(got) != 1 || len(got[0]) != 1 {
		t.Fatalf("one handler: %v", got)
	}
}

// P-SDK-14: a claimed task without a handler fails at once, permanently, code no_handler.
func TestNoHandlerFailsPermanently(t *testing.T) {
	s, c := newScripted(t)
	w := NewWorker(c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	s.add("task_ghost", "ghost")
	stop := runWorker(t, w)
	waitUntil(t, "the fail report", func() bool { return w.Stats().TasksFailed == 1 })
	stop()
	b := s.failBodies()["task_ghost"]
	d, _ := b["details"].(map[string]any)
	if b["code"] != CodeNoHandler || b["retryable"] != false || d["handler_name"] != "ghost" || fmt.Sprint(d["known_handlers"]) != "[echo]" {
		t.Fatalf("fail body %v", b)
	}
}

// P-SDK-15: an output that is not strict JSON fails the task once with invalid_output.
func TestNonJSONOutputFailsInvalidOutput(t *testing.T) {
	s, c := newScripted(t)
	w := NewWorker(c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	w.Handle("nan", func(ctx context.Context, t *Task) (any, error) { return map[string]any{"x": math.NaN()}, nil })
	w.Handle("chan", func(ctx context.Context, t *Task) (any, error) { return make(chan int), nil })
	s.add("task_nan", "nan")
	s.add("task_chan", "chan")
	stop := runWorker(t, w)
	waitUntil(t, "two fail reports", func() bool { return w.Stats().TasksFailed == 2 })
	stop()
	for id, b := range s.failBodies() {
		d, _ := b["details"].(map[string]any)
		if b["code"] != CodeInvalidOutput || b["retryable"] != false || d["type"] == "" || d["message"] == "" {
			t.Errorf("%s: fail body %v", id, b)
		}
	}
	if n := len(s.batches()); n != 0 {
		t.Fatalf("%d completion batches sent for outputs that are not JSON", n)
	}
}

// P-SDK-15: a batch refused as a whole (413) is split until the refused item goes alone;
// that item is failed with output_rejected, the others complete.
func TestRefusedBatchIsSplitAndTheBigItemRejected(t *testing.T) {
	s, c := newScripted(t)
	s.wholeBatch = func(ids []string) (int, string) {
		for _, id := range ids {
			if id == "task_big" {
				return 413, "payload_too_large"
			}
		}
		return 0, ""
	}
	inFirst, releaseFirst := make(chan struct{}), make(chan struct{})
	s.batchHook = func(n int) {
		if n == 1 {
			close(inFirst)
			<-releaseFirst
		}
	}
	w := NewWorker(c, WorkerOptions{WorkerID: "w1", Concurrency: 8, PollWait: 50 * time.Millisecond})
	gate := make(chan struct{})
	w.Handle("first", func(ctx context.Context, t *Task) (any, error) { return "1", nil })
	w.Handle("later", func(ctx context.Context, t *Task) (any, error) { <-gate; return t.ID, nil })
	s.add("task_0", "first")
	for _, id := range []string{"task_a", "task_b", "task_big", "task_c"} {
		s.add(id, "later")
	}
	stop := runWorker(t, w)
	<-inFirst
	close(gate)
	waitUntil(t, "four results waiting", func() bool {
		w.completions.mu.Lock()
		defer w.completions.mu.Unlock()
		return len(w.completions.queue) == 4
	})
	close(releaseFirst)
	waitUntil(t, "every outcome", func() bool { st := w.Stats(); return st.TasksCompleted == 4 && st.TasksFailed == 1 })
	stop()
	b := s.failBodies()["task_big"]
	d, _ := b["details"].(map[string]any)
	if b["code"] != CodeOutputRejected || b["retryable"] != false || d["status"] != float64(413) || d["code"] != "payload_too_large" || b["output"] != nil {
		t.Fatalf("fail body %v", b)
	}
	if st := w.Stats(); st.TasksLeaseLost != 0 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// P-SDK-16: a poll answered 503 with Retry-After waits that long (plus at most 10%).
func TestPollHonoursRetryAfter(t *testing.T) {
	s, c := newScripted(t)
	var mu sync.Mutex
	var times []time.Time
	s.pollFault = func(n int) (int, string) {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
		if n == 1 {
			return 503, "1"
		}
		return 0, ""
	}
	w := NewWorker(c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	stop := runWorker(t, w)
	waitUntil(t, "a second poll", func() bool { mu.Lock(); defer mu.Unlock(); return len(times) >= 2 })
	stop()
	gap := times[1].Sub(times[0])
	if gap < time.Second || gap > 1500*time.Millisecond {
		t.Fatalf("next poll after %v, want Retry-After 1 s + 0-10%%", gap)
	}
	if st := w.Stats(); st.PollErrors != 1 || st.Polls < 2 {
		t.Fatalf("stats %+v", st)
	}
}

// P-SDK-17: StopNow (the second signal) ends the grace period at once, even when the
// handler ignores its cancellation; the task is failed with shutdown.
func TestSecondStopEndsGracePeriod(t *testing.T) {
	s, c := newScripted(t)
	w := NewWorker(c, WorkerOptions{WorkerID: "w1", GracePeriod: time.Minute, PollWait: 50 * time.Millisecond})
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
	w := NewWorker(c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	s.mu.Lock()
	s.directive = "quiet"
	s.mu.Unlock()
	stop := runWorker(t, w)
	defer stop()
	waitUntil(t, "the operator quiet", func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.serverQuiet })
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
	w := NewWorker(c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
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
	w := NewWorker(c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
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
	w := NewWorker(c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond, Logger: logger, Hooks: Hooks{
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
	for _, want := range []string{`msg="orch8: task completed" worker_id=w1 task_id=task_ok attempt=1`,
		`msg="orch8: task failed" worker_id=w1 task_id=task_bad attempt=1 code=permanent_error`, `hook=OnPoll panic="hook bug"`} {
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
	w := NewWorker(c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
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
	w = NewWorker(c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond, Hooks: Hooks{
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

// P-SDK-19: a handler heartbeat sends lease_ms (the worker's LeaseDuration), never the
// deprecated extend_ms, with the checkpoint and progress.
func TestHandlerHeartbeatSendsLeaseMs(t *testing.T) {
	s, c := newScripted(t)
	w := NewWorker(c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond, LeaseDuration: 5 * time.Second})
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
