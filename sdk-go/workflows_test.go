package orch8

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func instanceJSON(status string) map[string]any {
	return map[string]any{"id": "inst_1", "sequence": "thumbs", "version": 1, "status": status,
		"input": map[string]any{}, "output": nil, "error": nil, "steps": []any{},
		"created_at": "2026-11-24T05:00:00Z", "updated_at": "2026-11-24T05:00:00Z", "finished_at": nil}
}

func taskJSON(status string) map[string]any {
	return map[string]any{"id": "task_1", "handler_name": "echo", "queue_name": "default", "status": status}
}

// P-SDK-25: rounds of at most 30000 ms of wait_ms on GET /instances/{id} until the
// instance is final; a failed instance is returned, not an error.
func TestP_SDK_25_WaitInstanceRoundsUntilFinal(t *testing.T) {
	for _, final := range []string{"completed", "failed", "cancelled"} {
		t.Run(final, func(t *testing.T) {
			s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
				status := "running" // the server ended its wait early (--max-wait-ms) twice
				if n == 3 {
					status = final
				}
				writeJSON(w, 200, instanceJSON(status))
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a broken helper fails, not hangs
			defer cancel()
			inst, err := c.WaitInstance(ctx, "inst_1", 0) // the default timeout, 5 min
			if err != nil || string(inst.Status) != final {
				t.Fatalf("got %v, %v", inst, err)
			}
			reqs := s.requests()
			if len(reqs) != 3 {
				t.Fatalf("want 3 rounds, got %d", len(reqs))
			}
			for _, r := range reqs {
				if r.Method != "GET" || r.Path != "/instances/inst_1?wait_ms=30000" {
					t.Errorf("round %s %s, want GET /instances/inst_1?wait_ms=30000", r.Method, r.Path)
				}
			}
		})
	}
}

// P-SDK-25: a task is final when completed, failed, cancelled or expired.
func TestP_SDK_25_WaitTaskFinalStates(t *testing.T) {
	for _, final := range []string{"completed", "failed", "cancelled", "expired"} {
		t.Run(final, func(t *testing.T) {
			s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
				status := []string{"pending", "running", "scheduled"}[min(n-1, 2)]
				if n == 4 {
					status = final
				}
				writeJSON(w, 200, taskJSON(status))
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			task, err := c.WaitTask(ctx, "task_1", time.Minute)
			if err != nil || string(task.Status) != final {
				t.Fatalf("got %v, %v", task, err)
			}
			reqs := s.requests()
			if len(reqs) != 4 || reqs[0].Path != "/tasks/task_1?wait_ms=30000" {
				t.Fatalf("requests %+v", reqs)
			}
		})
	}
}

// P-SDK-25: the last round waits only what is left of the timeout; when it passes the
// helper returns ErrWaitTimeout carrying the last state seen.
func TestP_SDK_25_WaitTimeoutCarriesLastState(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		time.Sleep(20 * time.Millisecond) // the server waits a little, then answers "still running"
		writeJSON(w, 200, instanceJSON("running"))
	})
	start := time.Now()
	inst, err := c.WaitInstance(context.Background(), "inst_1", 300*time.Millisecond)
	var te *WaitTimeoutError
	if !errors.Is(err, ErrWaitTimeout) || !errors.As(err, &te) {
		t.Fatalf("want ErrWaitTimeout, got %v", err)
	}
	if te.Instance == nil || te.Instance.Status != InstanceRunning || te.ID != "inst_1" || inst != te.Instance {
		t.Fatalf("timeout error carries %+v (returned %v)", te, inst)
	}
	if el := time.Since(start); el < 300*time.Millisecond || el > 5*time.Second {
		t.Fatalf("gave up after %s, want the 300 ms timeout", el)
	}
	first := s.requests()[0].Path
	if !strings.HasPrefix(first, "/instances/inst_1?wait_ms=") || first == "/instances/inst_1?wait_ms=30000" {
		t.Fatalf("first round %s: want wait_ms bounded by the 300 ms timeout", first)
	}
	if !strings.Contains(err.Error(), "last status running") {
		t.Fatalf("message %q", err)
	}
}

func TestP_SDK_25_WaitTaskTimeoutCarriesTask(t *testing.T) {
	_, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, taskJSON("running")) })
	_, err := c.WaitTask(context.Background(), "task_1", 100*time.Millisecond)
	var te *WaitTimeoutError
	if !errors.As(err, &te) || te.Task == nil || te.Task.Status != StatusRunning || te.Instance != nil {
		t.Fatalf("got %v", err)
	}
}

// P-SDK-25, P-SDK-2: an outage longer than one call's retries is ridden out; the wait
// goes on when the server answers again.
func TestP_SDK_25_WaitRidesOutOutage(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n <= 2*(1+DefaultMaxRetries) { // two whole calls fail
			w.Header().Set("Retry-After", "0")
			writeProblem(w, 503, "unavailable")
			return
		}
		writeJSON(w, 200, instanceJSON("completed"))
	})
	inst, err := c.WaitInstance(context.Background(), "inst_1", time.Minute)
	if err != nil || inst.Status != InstanceCompleted {
		t.Fatalf("got %v, %v", inst, err)
	}
	if n := len(s.requests()); n != 2*(1+DefaultMaxRetries)+1 {
		t.Fatalf("want %d requests, got %d", 2*(1+DefaultMaxRetries)+1, n)
	}
}

// An outage lasting past the timeout ends in ErrWaitTimeout wrapping the outage.
func TestP_SDK_25_OutageUntilTimeout(t *testing.T) {
	_, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "0")
		writeProblem(w, 503, "unavailable")
	})
	inst, err := c.WaitInstance(context.Background(), "inst_1", 400*time.Millisecond)
	var te *WaitTimeoutError
	if !errors.As(err, &te) || inst != nil || te.Instance != nil || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, %v", inst, err)
	}
}

// Errors that are not outages (404, 401, ...) end the wait at once.
func TestP_SDK_25_WaitStopsOnNotFound(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) { writeProblem(w, 404, "not_found") })
	_, err := c.WaitInstance(context.Background(), "inst_1", time.Minute)
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrWaitTimeout) || len(s.requests()) != 1 {
		t.Fatalf("got %v after %d requests", err, len(s.requests()))
	}
}

// P-SDK-25: GetTask keeps its signature and sends no wait_ms; GetTaskWithParams sends it.
func TestP_SDK_25_GetTaskKeepsSignature(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, taskJSON("running")) })
	var get func(context.Context, string) (*TaskRecord, error) = c.GetTask
	if _, err := get(context.Background(), "task_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTaskWithParams(context.Background(), "task_1", &GetTaskParams{WaitMs: Ptr(5)}); err != nil {
		t.Fatal(err)
	}
	if r := s.requests(); r[0].Path != "/tasks/task_1" || r[1].Path != "/tasks/task_1?wait_ms=5" {
		t.Fatalf("paths %s, %s", r[0].Path, r[1].Path)
	}
}

// P-SDK-2, P-WF-14: StartInstance and StartInstances (x-orch8-retry: idempotency-key) are
// retried on an outage only when the instance, or every instance of the batch, carries an
// idempotency_key; otherwise one request each.
func TestP_WF_14_StartInstancesRetriedOnlyWithEveryKey(t *testing.T) {
	var hits atomic.Int32
	_, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		hits.Add(1)
		w.Header().Set("Retry-After", "0")
		writeProblem(w, 503, "unavailable")
	})
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		call  func() error
		tries int32
	}{
		{"batch without keys", func() error {
			_, err := c.StartInstances(ctx, NewInstanceBatch{Instances: []NewInstance{{Sequence: "a"}, {Sequence: "a"}}})
			return err
		}, 1},
		{"batch with one key of two", func() error {
			_, err := c.StartInstances(ctx, NewInstanceBatch{Instances: []NewInstance{
				{Sequence: "a", IdempotencyKey: Ptr("k1")}, {Sequence: "a"}}})
			return err
		}, 1},
		{"batch with an empty key", func() error {
			_, err := c.StartInstances(ctx, NewInstanceBatch{Instances: []NewInstance{
				{Sequence: "a", IdempotencyKey: Ptr("k1")}, {Sequence: "a", IdempotencyKey: Ptr("")}}})
			return err
		}, 1},
		{"empty batch", func() error {
			_, err := c.StartInstances(ctx, NewInstanceBatch{})
			return err
		}, 1},
		{"batch with every key", func() error {
			_, err := c.StartInstances(ctx, NewInstanceBatch{Instances: []NewInstance{
				{Sequence: "a", IdempotencyKey: Ptr("k1")}, {Sequence: "a", IdempotencyKey: Ptr("k2")}}})
			return err
		}, 1 + DefaultMaxRetries},
		{"one instance without a key", func() error {
			_, err := c.StartInstance(ctx, NewInstance{Sequence: "a"})
			return err
		}, 1},
		{"one instance with a key", func() error {
			_, err := c.StartInstance(ctx, NewInstance{Sequence: "a", IdempotencyKey: Ptr("k1")})
			return err
		}, 1 + DefaultMaxRetries},
	} {
		before := hits.Load()
		if err := tc.call(); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("%s: got %v, want ErrUnavailable", tc.name, err)
		}
		if got := hits.Load() - before; got != tc.tries {
			t.Errorf("%s: %d requests, want %d", tc.name, got, tc.tries)
		}
	}
}
