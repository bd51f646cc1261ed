package orch8

import (
	"context"
	"sync"
	"testing"
	"time"
)

// pollSizes lists the batch_size of every poll sent, in order.
func (s *scripted) pollSizes() []int {
	var out []int
	for _, r := range s.sent("POST", "/workers/tasks/poll/batch") {
		n, _ := r.Body["batch_size"].(float64)
		out = append(out, int(n))
	}
	return out
}

// P-SDK-26: while results are being reported, a poll waits until the free slots reach the
// threshold (half of 4 = 2) instead of claiming for the one slot the first result freed.
func TestWorkerPollWaitsForReportingSlots(t *testing.T) {
	s, c := newScripted(t)
	release1, release2, firstAtServer := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var once1, once2 sync.Once
	open1 := func() { once1.Do(func() { close(release1) }) }
	open2 := func() { once2.Do(func() { close(release2) }) }
	t.Cleanup(func() { open1(); open2() }) // a failed wait must not leave the server blocked
	s.batchHook = func(n int) {
		switch n {
		case 1:
			close(firstAtServer)
			<-release1
		case 2:
			<-release2
		}
	}
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 4, PollWait: 50 * time.Millisecond})
	// task_a's result goes alone; the others return once it is at the server, so exactly
	// three results wait behind the first (whatever the goroutines' scheduling).
	w.Handle("quick", func(ctx context.Context, t *Task) (any, error) {
		if t.ID != "task_a" {
			<-firstAtServer
		}
		return "ok", nil
	})
	for _, id := range []string{"task_a", "task_b", "task_c", "task_d"} {
		s.add(id, "quick")
	}
	stop := runWorker(t, w)
	waitUntil(t, "three results waiting behind the first", func() bool {
		w.completions.mu.Lock()
		defer w.completions.mu.Unlock()
		return len(w.completions.queue) == 3
	})
	polled := len(s.pollSizes())
	open1() // one slot is free now, three results are still being reported
	waitUntil(t, "the first completion", func() bool { return w.Stats().TasksCompleted == 1 })
	// A worker without the threshold polls for the one free slot right away; give it the
	// time to do so (bounded), then let the other three results through.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline) && len(s.pollSizes()) == polled; {
		time.Sleep(5 * time.Millisecond)
	}
	open2()
	waitUntil(t, "four completions", func() bool { return w.Stats().TasksCompleted == 4 })
	waitUntil(t, "a poll after the results", func() bool { return len(s.pollSizes()) > polled })
	stop()
	sizes := s.pollSizes()
	if sizes[0] != 4 {
		t.Fatalf("first poll asked for %d, want 4", sizes[0])
	}
	for _, n := range sizes[polled:] {
		if n < 2 {
			t.Fatalf("poll sizes %v: a poll asked for %d while results were being reported (threshold 2)", sizes, n)
		}
	}
}

// P-SDK-26, P-SDK-3: when no result is being reported (the other held tasks are still in
// their handlers), a free slot is polled for at once, below the threshold.
func TestWorkerPollsForOneSlotWhileHandlersRun(t *testing.T) {
	s, c := newScripted(t)
	gate := make(chan struct{})
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 4, PollWait: 50 * time.Millisecond})
	w.Handle("long", func(ctx context.Context, t *Task) (any, error) { <-gate; return "ok", nil })
	w.Handle("quick", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	for _, id := range []string{"task_a", "task_b", "task_c"} {
		s.add(id, "long")
	}
	s.add("task_d", "quick")
	stop := runWorker(t, w)
	defer stop()
	defer close(gate)
	waitUntil(t, "the quick task's completion", func() bool { return w.Stats().TasksCompleted == 1 })
	waitUntil(t, "a poll for the one free slot", func() bool {
		sizes := s.pollSizes()
		return sizes[len(sizes)-1] == 1
	})
}

// P-SDK-26: the default threshold is half of min(concurrency, 100), rounded up; explicit
// values are capped to min(concurrency, 100).
func TestWorkerPollThresholdDefaults(t *testing.T) {
	for _, tc := range []struct{ concurrency, given, want int }{
		{1, 0, 1}, {4, 0, 2}, {10, 0, 5}, {101, 0, 50}, {150, 0, 50}, {10, 1, 1}, {10, 30, 10}, {300, 200, 100},
	} {
		o := WorkerOptions{Concurrency: tc.concurrency, PollThreshold: tc.given}.withDefaults()
		if o.PollThreshold != tc.want {
			t.Errorf("concurrency %d, PollThreshold %d: got %d, want %d", tc.concurrency, tc.given, o.PollThreshold, tc.want)
		}
	}
	if o := (WorkerOptions{}).withDefaults(); o.PollThreshold != 5 {
		t.Errorf("default concurrency: PollThreshold %d, want 5", o.PollThreshold)
	}
}
