package orch8

import (
	"context"
	"sync"
	"testing"
	"time"
)

// tenHeldBatches adds ten tasks and holds every complete/batch request until the returned
// func is called.
func tenHeldBatches(t *testing.T, s *scripted) (open func()) {
	gate := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open) // a failed wait must not leave the server blocked
	s.batchHook = func(int) { <-gate }
	for _, id := range []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"} {
		s.add(id, "quick")
	}
	return open
}

func (s *scripted) claimed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return 10 - len(s.queue)
}

// P-SDK-3: the two completions handed over free their slots, so two more tasks are claimed
// while the first batch is held; those four results awaiting an answer are the cap
// (2 freed + 2 keeping their slots), so nothing more is claimed until answers come.
func TestWorkerPollsWhileABatchIsUnansweredUpToTheCap(t *testing.T) {
	s, c := newScripted(t)
	open := tenHeldBatches(t, s)
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 2, PollWait: 50 * time.Millisecond})
	w.Handle("quick", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	stop := runWorker(t, w)
	waitUntil(t, "two more claimed while the first batch is held", func() bool {
		return s.claimed() == 4 && w.Stats().InFlight == 4
	})
	if n := w.Stats().TasksCompleted; n != 0 {
		t.Fatalf("%d completed before any batch was answered", n)
	}
	// The cap: give a worker without one the time to claim a fifth (bounded), then answer.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline) && s.claimed() == 4; {
		time.Sleep(5 * time.Millisecond)
	}
	if n := s.claimed(); n != 4 {
		t.Fatalf("claimed %d: beyond concurrency + completions awaiting answers", n)
	}
	open()
	waitUntil(t, "every task completed", func() bool { return w.Stats().TasksCompleted == 10 })
	stop()
	for _, n := range s.pollSizes() {
		if n < 1 || n > 2 {
			t.Fatalf("poll sizes %v: one outside 1..concurrency", s.pollSizes())
		}
	}
}

// P-SDK-7: a stop still delivers the completions whose slots were already freed.
func TestWorkerStopDeliversHandedOverCompletions(t *testing.T) {
	s, c := newScripted(t)
	open := tenHeldBatches(t, s)
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 2, PollWait: 50 * time.Millisecond})
	w.Handle("quick", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	stop := runWorker(t, w)
	waitUntil(t, "four held, two of them freed", func() bool { return w.Stats().InFlight == 4 })
	go func() { // answers come only once the stop has begun
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			w.mu.Lock()
			stopping := w.stopping
			w.mu.Unlock()
			if stopping {
				break
			}
		}
		open()
	}()
	stop()
	if st := w.Stats(); st.TasksCompleted != 4 || st.InFlight != 0 {
		t.Fatalf("after stop: %d completed, %d in flight; want 4, 0", st.TasksCompleted, st.InFlight)
	}
}
