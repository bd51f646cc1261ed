package orch8

// Unit tests of the worker heartbeat cadence (P-SDK-4, P-SDK-30) against an httptest server.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// leaseServer is a worker-protocol server whose heartbeat interval is 5000 ms and whose one
// task is claimed with a lease that expires lease after the poll answer.
type leaseServer struct {
	mu        sync.Mutex
	lease     time.Duration
	claimed   bool
	claimedAt time.Time   // when the poll answer carrying the task was written
	completed time.Time   // when the task's completion arrived
	hbs       []time.Time // every worker heartbeat
	hbNamed   []bool      // whether that heartbeat listed the task
}

func (s *leaseServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	now := time.Now()
	switch {
	case r.URL.Path == "/workers" || r.Method == http.MethodDelete:
		writeJSON(w, 200, map[string]any{"worker_id": "w1", "state": "running", "directive": "running", "hostname": nil,
			"pid": nil, "handlers": []string{}, "queues": []string{}, "concurrency": nil, "labels": map[string]string{},
			"sdk": nil, "active_tasks": 0, "registered_at": "2026-11-21T10:00:00.000Z",
			"last_heartbeat_at": "2026-11-21T10:00:00.000Z", "heartbeat_interval_ms": 5000, "dead_after_ms": 30000})
	case r.URL.Path == "/workers/tasks/poll/batch":
		s.mu.Lock()
		first := !s.claimed
		s.claimed = true
		s.mu.Unlock()
		if !first {
			select { // an empty long-poll
			case <-time.After(50 * time.Millisecond):
			case <-r.Context().Done():
			}
			writeJSON(w, 200, map[string]any{"tasks": []any{}, "next_poll_after_ms": 0})
			return
		}
		expires := time.Now().Add(s.lease).UTC().Format("2006-01-02T15:04:05.000Z")
		task := strings.Replace(claimedJSON, "2030-01-01T00:00:00.000Z", expires, 1)
		s.mu.Lock()
		s.claimedAt = time.Now()
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"tasks": []json.RawMessage{json.RawMessage(task)}, "next_poll_after_ms": 0})
	case r.URL.Path == "/workers/w1/heartbeat":
		ids, _ := body["active_task_ids"].([]any)
		named := slices.Contains(ids, any("task_1"))
		s.mu.Lock()
		s.hbs = append(s.hbs, now)
		s.hbNamed = append(s.hbNamed, named)
		s.mu.Unlock()
		tasks := []map[string]any{}
		if named {
			tasks = append(tasks, map[string]any{"task_id": "task_1", "lease_expires_at": time.Now().Add(s.lease).UTC().Format(time.RFC3339Nano),
				"cancel_requested": false, "lease_lost": false})
		}
		writeJSON(w, 200, map[string]any{"directive": "running", "heartbeat_interval_ms": 5000, "tasks": tasks})
	case strings.HasSuffix(r.URL.Path, "/complete") || r.URL.Path == "/workers/tasks/complete/batch":
		s.mu.Lock()
		s.completed = now
		s.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/batch") {
			writeJSON(w, 200, map[string]any{"items": []any{map[string]any{"task_id": "task_1", "status": "completed", "attempt": 1,
				"attempts_left": 0, "next_attempt_at": nil, "problem": nil}}})
			return
		}
		writeJSON(w, 200, map[string]any{"task_id": "task_1", "status": "completed", "attempt": 1, "attempts_left": 0,
			"next_attempt_at": nil, "error_code": nil})
	default:
		writeProblem(w, 404, "not_found")
	}
}

// namedSince counts the worker heartbeats listing the task at or after from.
func (s *leaseServer) namedSince(from time.Time) (n int, times []time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, at := range s.hbs {
		if s.hbNamed[i] && !at.Before(from) {
			n++
			times = append(times, at.Sub(from))
		}
	}
	return n, times
}

// P-SDK-30: with the server's 5000 ms interval, a task whose lease ends 1500 ms after the
// poll answer is heartbeated about every 500 ms (a third of its lease), the first within
// that of its claim; once it is done the cadence is the server's 5000 ms again.
func TestWorkerHeartbeatFitsShortLease_P_SDK_30(t *testing.T) {
	s := &leaseServer{lease: 1500 * time.Millisecond}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	c, err := NewClient(Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 1, PollWait: 50 * time.Millisecond})
	release := make(chan struct{})
	w.Handle("echo", func(ctx context.Context, _ *Task) (any, error) {
		select {
		case <-release:
			return map[string]any{"ok": true}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	done := sync.OnceFunc(func() { close(release) })
	stop := runWorker(t, w)
	defer stop()
	defer done() // a failed assertion still lets the handler return

	var claimedAt time.Time
	waitUntil(t, "the task claimed", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		claimedAt = s.claimedAt
		return !claimedAt.IsZero()
	})
	// At least 3 worker heartbeats naming the task within about 2 s of its claim.
	deadline := claimedAt.Add(2200 * time.Millisecond)
	for {
		n, _ := s.namedSince(claimedAt)
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			_, times := s.namedSince(claimedAt)
			t.Fatalf("P-SDK-30: %d worker heartbeats named the task within 2.2 s of its claim (at %v), want >= 3", n, times)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, times := s.namedSince(claimedAt)
	if times[0] > 650*time.Millisecond {
		t.Errorf("P-SDK-30: first heartbeat naming the task %v after its claim, want within a third of the lease", times[0])
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i] - times[i-1]; gap < 80*time.Millisecond {
			t.Errorf("P-SDK-30: heartbeats %v apart, never more often than every 100 ms (times %v)", gap, times)
		}
	}
	if st := w.Stats(); st.TasksLeaseLost != 0 {
		t.Fatalf("stats %+v", st)
	}

	done()
	waitUntil(t, "the task completed", func() bool { return w.Stats().TasksCompleted == 1 })
	s.mu.Lock()
	completed := s.completed
	s.mu.Unlock()
	// Back to the server's interval: within 1 s of the completion, no heartbeat that does not
	// name the task (at most one that does, already on its way as the task left).
	quiet := time.NewTimer(time.Second)
	<-quiet.C
	s.mu.Lock()
	var after, afterNamed int
	for i, at := range s.hbs {
		if at.After(completed) {
			after++
			if s.hbNamed[i] {
				afterNamed++
			}
		}
	}
	s.mu.Unlock()
	if after-afterNamed > 0 || afterNamed > 1 {
		t.Errorf("P-SDK-30: %d worker heartbeats (%d naming the task) within 1 s after it completed, want none at a 5000 ms interval", after, afterNamed)
	}
}

// P-SDK-30: the next heartbeat is the server's interval after the last with no task held,
// a third of the shortest held lease (never under 100 ms) after the later of the last
// heartbeat and the task's claim otherwise; a dropped task does not count.
func TestNextHeartbeatFitsHeldLeases_P_SDK_30(t *testing.T) {
	w := mustWorker(t, nil, WorkerOptions{WorkerID: "w1"})
	w.interval = 5 * time.Second
	last := time.Now()
	hold := func(id string, lease time.Duration, claimed time.Time) *run {
		r := &run{task: &Task{ID: id, LeaseID: "l_" + id}, lease: lease, answered: claimed, cancel: func(error) {}}
		w.held[r.key()] = r
		return r
	}
	check := func(want time.Duration) {
		t.Helper()
		w.mu.Lock()
		got := w.nextHeartbeatLocked(last).Sub(last)
		w.mu.Unlock()
		if got != want {
			t.Errorf("next heartbeat %v after the last, want %v", got, want)
		}
	}
	check(5 * time.Second)
	hold("long", time.Minute, last.Add(-time.Second))
	check(5 * time.Second)
	short := hold("short", 1500*time.Millisecond, last.Add(-time.Second))
	check(500 * time.Millisecond)
	later := hold("later", 1500*time.Millisecond, last.Add(time.Second)) // claimed after the last
	check(500 * time.Millisecond)
	short.drop(ErrLeaseLost, outcomeLeaseLost)
	check(1500 * time.Millisecond) // a third of its lease after its claim
	later.drop(ErrLeaseLost, outcomeLeaseLost)
	hold("expired", 0, last.Add(-time.Second))
	check(100 * time.Millisecond)
	w.opts.HeartbeatInterval = 5 * time.Second // the worker's own interval is kept as given
	check(5 * time.Second)
}
