package orch8

// Unit tests of poll limits, no handler, outputs and outages (P-SDK-13..16), against the
// scripted HTTP layer of worker_test.go.

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

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
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 150, PollWait: 50 * time.Millisecond})
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
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
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
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
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
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 8, PollWait: 50 * time.Millisecond})
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
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
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
