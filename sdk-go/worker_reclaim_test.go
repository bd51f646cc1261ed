package orch8

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestReclaimedTaskKeepsBothRunsBookkeeping_P_SDK_5_P_SDK_11: a task reaped and claimed
// again by the same worker while its first run still goes is two runs: the first is given
// up as lease lost (its late result is never sent), the second completes, and both leave
// the held set, so no slot leaks and in_flight returns to 0.
func TestReclaimedTaskKeepsBothRunsBookkeeping_P_SDK_5_P_SDK_11(t *testing.T) {
	s, c := newScripted(t)
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 2, PollWait: 50 * time.Millisecond})
	releaseFirst := make(chan struct{})
	var runs atomic.Int32
	w.Handle("hold", func(ctx context.Context, t *Task) (any, error) {
		if runs.Add(1) == 1 {
			<-releaseFirst // a slow handler that does not watch its context
			return "stale", nil
		}
		return "fresh", nil
	})
	s.leaseOf["task_r"] = "lease_1"
	s.add("task_r", "hold")
	stop := runWorker(t, w)
	waitUntil(t, "the first run", func() bool { return runs.Load() == 1 })
	s.mu.Lock()
	s.leaseOf["task_r"] = "lease_2" // the server reaped lease_1 and hands the task out again
	s.mu.Unlock()
	s.add("task_r", "hold")
	waitUntil(t, "the second run to complete", func() bool { return w.Stats().TasksCompleted == 1 })
	close(releaseFirst)
	waitUntil(t, "both runs to leave", func() bool {
		st := w.Stats()
		return st.InFlight == 0 && st.TasksLeaseLost == 1
	})
	w.mu.Lock()
	held := len(w.held)
	w.mu.Unlock()
	st := w.Stats()
	stop()
	if held != 0 || st.TasksClaimed != 2 || st.TasksCompleted != 1 {
		t.Errorf("held %d, stats %+v; want 0 held, 2 claimed, 1 completed, 1 lease lost", held, st)
	}
	for _, r := range s.sent("POST", "/complete/batch") {
		items, _ := r.Body["items"].([]any)
		for _, it := range items {
			if it.(map[string]any)["lease_id"] == "lease_1" {
				t.Errorf("the first run's stale result was sent: %v", it)
			}
		}
	}
}
