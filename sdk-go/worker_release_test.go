package orch8

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// P-SDK-32: a handler that returns Yield has its task released with the claim's lease, the
// checkpoint and the delay; nothing is failed and the release is counted.
func TestYieldReleasesWithCheckpointAndDelay(t *testing.T) {
	s, c := newScripted(t)
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	w.Handle("long", func(ctx context.Context, t *Task) (any, error) {
		return nil, Yield(map[string]any{"cursor": 1000}, 250*time.Millisecond)
	})
	s.add("task_a", "long")
	stop := runWorker(t, w)
	waitUntil(t, "the release", func() bool { return w.Stats().TasksReleased == 1 })
	stop()
	got := s.sent("POST", "/workers/tasks/task_a/release")
	want := map[string]any{"lease_id": "lease_task_a", "delay_ms": 250.0, "checkpoint": map[string]any{"cursor": 1000.0}}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Body, want) {
		t.Fatalf("release requests %v, want one with %v", got, want)
	}
	if n := len(s.sent("POST", "/fail")); n != 0 {
		t.Fatalf("%d fails sent for a yield", n)
	}
	st := w.Stats()
	if st.TasksClaimed != 1 || st.TasksReleased != 1 || st.TasksFailed != 0 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestYieldDelayIsClampedToTheContract(t *testing.T) {
	for _, c := range []struct {
		delay time.Duration
		ms    int
	}{{-time.Second, 0}, {0, 0}, {1500 * time.Millisecond, 1500}, {48 * time.Hour, 86_400_000}} {
		var y *YieldError
		if !errors.As(Yield(nil, c.delay), &y) {
			t.Fatal("Yield is not a *YieldError")
		}
		rel := yieldRelease(y, "l")
		if *rel.DelayMs != c.ms || rel.Checkpoint != nil || *rel.LeaseID != "l" {
			t.Errorf("delay %s: release %+v", c.delay, rel)
		}
	}
}

// P-SDK-33: a task whose good_until passed before its handler started is released unrun,
// with no OnTaskStart; a task still within its deadline runs.
func TestExpiredTaskIsReleasedWithoutRunning(t *testing.T) {
	s, c := newScripted(t)
	var started []string
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond,
		Hooks: Hooks{OnTaskStart: func(e TaskStartEvent) { started = append(started, e.Task.ID) }}})
	ran := make(chan string, 2)
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { ran <- t.ID; return "ok", nil })
	s.add("task_late", "echo")
	s.add("task_fine", "echo")
	s.goodUntil["task_late"] = time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	s.goodUntil["task_fine"] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	stop := runWorker(t, w)
	waitUntil(t, "one release and one completion", func() bool {
		st := w.Stats()
		return st.TasksReleased == 1 && st.TasksCompleted == 1
	})
	stop()
	close(ran)
	var ids []string
	for id := range ran {
		ids = append(ids, id)
	}
	if !reflect.DeepEqual(ids, []string{"task_fine"}) || !reflect.DeepEqual(started, []string{"task_fine"}) {
		t.Fatalf("handlers ran for %v, OnTaskStart for %v; want only task_fine", ids, started)
	}
	got := s.sent("POST", "/workers/tasks/task_late/release")
	want := map[string]any{"lease_id": "lease_task_late", "delay_ms": 0.0}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Body, want) {
		t.Fatalf("release requests %v, want one with %v", got, want)
	}
}

func TestExpiredComparesWithTheWorkersClock(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Millisecond), now.Add(time.Millisecond)
	if expired(nil, now) || expired(&future, now) || !expired(&past, now) || !expired(&now, now) {
		t.Fatal("expired: nil and future deadlines run; past and present ones do not")
	}
}
