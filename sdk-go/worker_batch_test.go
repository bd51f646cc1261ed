package orch8

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// completeBatch answers POST /workers/tasks/complete/batch with one outcome per item.
func (s *scripted) completeBatch(w http.ResponseWriter, rec recorded) {
	s.mu.Lock()
	s.results++
	n := s.results
	s.mu.Unlock()
	if s.batchHook != nil {
		s.batchHook(n)
	}
	if s.wholeBatch != nil {
		if st, code := s.wholeBatch(batchIDs(rec)); st != 0 {
			writeProblem(w, st, code)
			return
		}
	}
	if s.result != nil {
		if st := s.result(rec.Path, n); st != 200 {
			writeProblem(w, st, map[int]string{409: "lease_lost", 503: "unavailable"}[st])
			return
		}
	}
	out := []map[string]any{}
	for _, id := range batchIDs(rec) {
		code := ""
		if s.itemProblem != nil {
			code = s.itemProblem(id)
		}
		if code == "" {
			out = append(out, map[string]any{"task_id": id, "status": "completed", "attempt": 1, "attempts_left": 0,
				"next_attempt_at": nil, "problem": nil})
			continue
		}
		out = append(out, map[string]any{"task_id": id, "status": "error", "attempt": nil, "attempts_left": nil,
			"next_attempt_at": nil, "problem": map[string]any{"code": code, "status": 409, "detail": "lease is no longer current"}})
	}
	writeJSON(w, 200, map[string]any{"items": out})
}

// batchIDs lists the task ids of one complete/batch request, in request order.
func batchIDs(rec recorded) []string {
	var ids []string
	items, _ := rec.Body["items"].([]any)
	for _, it := range items {
		ids = append(ids, fmt.Sprint(it.(map[string]any)["task_id"]))
	}
	return ids
}

// batches lists every complete/batch request's task ids, in the order they were sent.
func (s *scripted) batches() [][]string {
	var out [][]string
	for _, r := range s.sent("POST", "/workers/tasks/complete/batch") {
		out = append(out, batchIDs(r))
	}
	return out
}

// P-SDK-12: with nothing in flight a result goes out at once, alone, as a batch of one.
func TestWorkerSendsLoneResultAtOnceAsBatchOfOne(t *testing.T) {
	s, c := newScripted(t)
	var completed []string
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond,
		Hooks: Hooks{OnTaskComplete: func(e TaskCompleteEvent) { completed = append(completed, e.Task.ID) }}})
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	s.add("task_1", "echo")
	stop := runWorker(t, w)
	waitUntil(t, "the completion", func() bool { return w.Stats().TasksCompleted == 1 })
	stop()
	b := s.sent("POST", "/workers/tasks/complete/batch")
	if len(b) != 1 {
		t.Fatalf("%d batch requests, want 1", len(b))
	}
	items := b[0].Body["items"].([]any)
	item := items[0].(map[string]any)
	if len(items) != 1 || item["task_id"] != "task_1" || item["lease_id"] != "lease_task_1" || item["output"] != "ok" {
		t.Fatalf("batch body %v", b[0].Body)
	}
	if n := len(s.sent("POST", "/complete")); n != 0 {
		t.Fatalf("%d single completes sent", n)
	}
	if fmt.Sprint(completed) != "[task_1]" || w.Stats().InFlight != 0 {
		t.Fatalf("hook saw %v, stats %+v", completed, w.Stats())
	}
}

// P-SDK-12: results that finish while a request is in flight go together in the next one.
func TestWorkerGroupsResultsReadyWhileABatchIsInFlight(t *testing.T) {
	s, c := newScripted(t)
	inFirst, releaseFirst := make(chan struct{}), make(chan struct{})
	s.batchHook = func(n int) {
		if n == 1 {
			close(inFirst)
			<-releaseFirst
		}
	}
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 5, PollWait: 50 * time.Millisecond})
	gate := make(chan struct{})
	w.Handle("first", func(ctx context.Context, t *Task) (any, error) { return "1", nil })
	w.Handle("later", func(ctx context.Context, t *Task) (any, error) { <-gate; return "2", nil })
	s.add("task_a", "first")
	for _, id := range []string{"task_b", "task_c", "task_d"} {
		s.add(id, "later")
	}
	stop := runWorker(t, w)
	<-inFirst // task_a's batch is in flight; now let the other three finish
	close(gate)
	waitUntil(t, "three results waiting", func() bool {
		w.completions.mu.Lock()
		defer w.completions.mu.Unlock()
		return len(w.completions.queue) == 3
	})
	close(releaseFirst)
	waitUntil(t, "four completions", func() bool { return w.Stats().TasksCompleted == 4 })
	stop()
	got := s.batches()
	if len(got) != 2 || fmt.Sprint(got[0]) != "[task_a]" {
		t.Fatalf("batches %v, want [task_a] then the other three together", got)
	}
	sort.Strings(got[1])
	if fmt.Sprint(got[1]) != "[task_b task_c task_d]" {
		t.Fatalf("second batch %v", got[1])
	}
}

// P-SDK-12, P-SDK-5: an item refused with lease_lost counts as lease lost and is not re-sent.
func TestWorkerBatchItemLeaseLostIsNotResent(t *testing.T) {
	s, c := newScripted(t)
	s.itemProblem = func(id string) string {
		if id == "task_lost" {
			return "lease_lost"
		}
		return ""
	}
	completed := 0
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 1, PollWait: 50 * time.Millisecond,
		Hooks: Hooks{OnTaskComplete: func(TaskCompleteEvent) { completed++ }}})
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	s.add("task_lost", "echo")
	s.add("task_ok", "echo")
	stop := runWorker(t, w)
	waitUntil(t, "both outcomes", func() bool { st := w.Stats(); return st.TasksCompleted == 1 && st.TasksLeaseLost == 1 })
	stop()
	// Each result is sent once, the refused one included, however the two are batched: a
	// slot is free once its result is handed over (P-SDK-26), so task_ok may finish while
	// task_lost's result still waits and both go in one batch.
	sent := map[string]int{}
	for _, batch := range s.batches() {
		for _, id := range batch {
			sent[id]++
		}
	}
	if sent["task_lost"] != 1 || sent["task_ok"] != 1 || len(sent) != 2 {
		t.Fatalf("batches %v: each result must be sent once, the refused item not re-sent", s.batches())
	}
	if st := w.Stats(); st.TasksCompleted != 1 || st.TasksLeaseLost != 1 || st.TasksCancelled != 0 || completed != 1 {
		t.Fatalf("stats %+v, complete hook fired %d times", st, completed)
	}
}

// P-SDK-12, P-SDK-9: a 503 on the batch (longer than the client's own retries) re-sends
// the same items with the outage backoff until they land.
func TestWorkerBatch503ResendsTheSameItems(t *testing.T) {
	s, c := newScripted(t)
	s.result = func(path string, n int) int {
		if n <= 5 {
			return 503
		}
		return 200
	}
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 2, PollWait: 50 * time.Millisecond})
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return t.ID, nil })
	s.add("task_1", "echo")
	stop := runWorker(t, w)
	waitUntil(t, "the completion to land", func() bool { return w.Stats().TasksCompleted == 1 })
	stop()
	b := s.sent("POST", "/workers/tasks/complete/batch")
	if len(b) != 6 {
		t.Fatalf("batch sent %d times, want 6", len(b))
	}
	for i, r := range b {
		if fmt.Sprint(r.Body["items"]) != fmt.Sprint(b[0].Body["items"]) || !strings.Contains(fmt.Sprint(r.Body), "task_1") {
			t.Fatalf("request %d carried %v, want the same items as the first %v", i, r.Body, b[0].Body)
		}
	}
	if st := w.Stats(); st.TasksCompleted != 1 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}
