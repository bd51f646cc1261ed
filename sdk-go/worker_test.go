package orch8

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// scripted is an httptest HTTP layer for the worker's request shapes: it hands out the
// queued tasks, records every request and answers results with fixed outcomes.
type scripted struct {
	t        *testing.T
	mu       sync.Mutex
	queue    []string // task ids waiting to be claimed
	handler  map[string]string
	queueOf  map[string]string // the claimed task's queue_name; "default" when absent
	leaseOf  map[string]string // the claimed task's lease id; "lease_<id>" when absent
	reqs     []recorded
	hbAnswer func(taskID string) (leaseLost, cancelRequested bool)
	result   func(path string, n int) int // status for complete/fail (single or batch); 200 when nil
	// resultRetryAfter is the Retry-After header of a result's problem answer ("" = none).
	resultRetryAfter string
	results          int
	// batchHook runs before the n-th complete/batch request is answered (it may block);
	// itemProblem names the problem code of an item's answer ("" = completed).
	batchHook   func(n int)
	itemProblem func(taskID string) string
	// wholeBatch refuses a complete/batch request as a whole when it returns a status.
	wholeBatch func(ids []string) (status int, code string)
	// pollFault answers the n-th poll with a problem when it returns a status.
	pollFault func(n int) (status int, retryAfter string)
	polls     int
	// rejectedPolls counts polls the real server would refuse for size (P-SDK-13).
	rejectedPolls int
	directive     string                        // the worker heartbeat's directive; "running" when empty
	taskHeartbeat func(id string) (int, string) // per-task heartbeat answer; 200 when nil
	goodUntil     map[string]string             // the claimed task's good_until (RFC 3339); null when absent (P-SDK-33)
}

func newScripted(t *testing.T) (*scripted, *Client) {
	s := &scripted{t: t, handler: map[string]string{}, queueOf: map[string]string{}, leaseOf: map[string]string{}, goodUntil: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	c, err := NewClient(Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func (s *scripted) add(id, handler string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, id)
	s.handler[id] = handler
}

func (s *scripted) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	rec := recorded{Method: r.Method, Path: r.URL.Path}
	_ = json.Unmarshal(raw, &rec.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	s.mu.Unlock()
	worker := map[string]any{"worker_id": "w1", "state": "running", "directive": "running", "hostname": nil, "pid": nil,
		"handlers": []string{}, "queues": []string{}, "concurrency": nil, "labels": map[string]string{}, "sdk": nil,
		"active_tasks": 0, "registered_at": "2026-11-21T10:00:00.000Z", "last_heartbeat_at": "2026-11-21T10:00:00.000Z",
		"heartbeat_interval_ms": 40, "dead_after_ms": 30000}
	switch {
	case r.URL.Path == "/workers" || r.Method == http.MethodDelete:
		writeJSON(w, 200, worker)
	case r.URL.Path == "/workers/tasks/poll/batch":
		s.poll(w, rec)
	case strings.HasSuffix(r.URL.Path, "/heartbeat") && strings.HasPrefix(r.URL.Path, "/workers/tasks/"):
		st, code := 200, ""
		if s.taskHeartbeat != nil {
			st, code = s.taskHeartbeat(strings.Split(r.URL.Path, "/")[3])
		}
		if st != 200 {
			writeProblem(w, st, code)
			return
		}
		writeJSON(w, 200, map[string]any{"lease_id": rec.Body["lease_id"], "lease_expires_at": "2030-01-01T00:00:00.000Z", "cancel_requested": false})
	case strings.HasSuffix(r.URL.Path, "/heartbeat") && strings.HasPrefix(r.URL.Path, "/workers/w1"):
		var tasks []map[string]any
		ids, _ := rec.Body["active_task_ids"].([]any)
		for _, id := range ids {
			lost, cancelled := false, false
			if s.hbAnswer != nil {
				lost, cancelled = s.hbAnswer(id.(string))
			}
			tasks = append(tasks, map[string]any{"task_id": id, "lease_expires_at": "2030-01-01T00:00:00.000Z",
				"cancel_requested": cancelled, "lease_lost": lost})
		}
		s.mu.Lock()
		directive := s.directive
		s.mu.Unlock()
		if directive == "" {
			directive = "running"
		}
		writeJSON(w, 200, map[string]any{"directive": directive, "heartbeat_interval_ms": 40, "tasks": tasks})
	case strings.HasSuffix(r.URL.Path, "/release"): // P-SDK-32, P-SDK-33
		writeJSON(w, 200, map[string]any{"task_id": strings.Split(r.URL.Path, "/")[3], "status": "pending", "attempt": 0,
			"attempts_left": 3, "next_attempt_at": nil, "error_code": nil})
	case r.URL.Path == "/workers/tasks/complete/batch":
		s.completeBatch(w, rec)
	case strings.HasSuffix(r.URL.Path, "/complete") || strings.HasSuffix(r.URL.Path, "/fail"):
		s.mu.Lock()
		s.results++
		n := s.results
		s.mu.Unlock()
		if s.result != nil {
			if st := s.result(r.URL.Path, n); st != 200 {
				if s.resultRetryAfter != "" {
					w.Header().Set("Retry-After", s.resultRetryAfter)
				}
				writeProblem(w, st, map[int]string{409: "lease_lost", 503: "unavailable", 413: "payload_too_large", 400: "payload_too_deep"}[st])
				return
			}
		}
		writeJSON(w, 200, map[string]any{"task_id": "x", "status": "completed", "attempt": 1, "attempts_left": 0,
			"next_attempt_at": nil, "error_code": nil})
	default:
		s.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		w.WriteHeader(500)
	}
}

func (s *scripted) poll(w http.ResponseWriter, rec recorded) {
	size := int(rec.Body["batch_size"].(float64))
	names, _ := rec.Body["handler_names"].([]any)
	s.mu.Lock()
	s.polls++
	n := s.polls
	if size < 1 || size > 100 || len(names) > 50 {
		s.rejectedPolls++
		s.mu.Unlock()
		writeProblem(w, 422, "validation_error")
		return
	}
	if s.pollFault != nil {
		if st, ra := s.pollFault(n); st != 0 {
			s.mu.Unlock()
			if ra != "" {
				w.Header().Set("Retry-After", ra)
			}
			writeProblem(w, st, map[int]string{429: "rate_limited", 503: "unavailable"}[st])
			return
		}
	}
	var claimed []json.RawMessage
	for len(s.queue) > 0 && len(claimed) < size {
		id := s.queue[0]
		s.queue = s.queue[1:]
		body := strings.NewReplacer(`"task_1"`, fmt.Sprintf("%q", id), `"lease_1"`, fmt.Sprintf("%q", cmp.Or(s.leaseOf[id], "lease_"+id)),
			`"echo"`, fmt.Sprintf("%q", s.handler[id]), `"default"`, fmt.Sprintf("%q", cmp.Or(s.queueOf[id], "default")),
			`"good_until":null`, `"good_until":`+cmp.Or(strconvQuote(s.goodUntil[id]), "null")).Replace(claimedJSON)
		claimed = append(claimed, json.RawMessage(body))
	}
	s.mu.Unlock()
	if len(claimed) == 0 {
		time.Sleep(20 * time.Millisecond) // a short long-poll
		claimed = []json.RawMessage{}
	}
	writeJSON(w, 200, map[string]any{"tasks": claimed, "next_poll_after_ms": 0})
}

// strconvQuote is s as a JSON string, or "" for "".
func strconvQuote(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf("%q", s)
}

func (s *scripted) sent(method, pathSuffix string) []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []recorded
	for _, r := range s.reqs {
		if r.Method == method && strings.HasSuffix(r.Path, pathSuffix) {
			out = append(out, r)
		}
	}
	return out
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func runWorker(t *testing.T, w *Worker) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return")
		}
	}
}

func TestWorkerFailureReportShapes(t *testing.T) {
	s, c := newScripted(t)
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	w.Handle("panics", func(ctx context.Context, t *Task) (any, error) { panic("kaboom") })
	w.Handle("later", func(ctx context.Context, t *Task) (any, error) {
		return nil, Retryable(errors.New("busy"), 1500*time.Millisecond)
	})
	w.Handle("never", func(ctx context.Context, t *Task) (any, error) {
		return nil, &PermanentError{Err: errors.New("bad input"), Code: "bad_input"}
	})
	w.Handle("plain", func(ctx context.Context, t *Task) (any, error) { return nil, errors.New("oops") })
	for _, h := range []string{"panics", "later", "never", "plain"} {
		s.add("task_"+h, h)
	}
	stop := runWorker(t, w)
	waitUntil(t, "four fail reports", func() bool { return len(s.sent("POST", "/fail")) == 4 })
	stop()
	got := map[string]map[string]any{}
	for _, r := range s.sent("POST", "/fail") {
		got[strings.Split(r.Path, "/")[3]] = r.Body
	}
	check := func(id string, retryable bool, code string) map[string]any {
		b := got[id]
		if b["retryable"] != retryable || b["code"] != code || b["lease_id"] != "lease_"+id {
			t.Errorf("%s: fail body %v", id, b)
		}
		return b
	}
	// P-SDK-20: unhandled details have exactly the keys type, message, stack.
	if b := check("task_panics", true, CodeUnhandledError); b["error"] != "panic: kaboom" || fmt.Sprint(keys(b["details"])) != "[message stack type]" ||
		b["details"].(map[string]any)["stack"] == "" || b["details"].(map[string]any)["type"] != "string" || b["details"].(map[string]any)["message"] != "kaboom" {
		t.Errorf("panic report %v", b)
	}
	if b := check("task_later", true, CodeRetryableError); b["retry_after_ms"] != float64(1500) {
		t.Errorf("retry_after_ms %v", b["retry_after_ms"])
	}
	if b := check("task_never", false, "bad_input"); b["error"] != "bad input" {
		t.Errorf("permanent report %v", b)
	}
	if b := check("task_plain", true, CodeUnhandledError); fmt.Sprint(keys(b["details"])) != "[message stack type]" ||
		b["details"].(map[string]any)["type"] != "*errors.errorString" || b["details"].(map[string]any)["message"] != "oops" {
		t.Errorf("unhandled report %v", b)
	}
	if st := w.Stats(); st.TasksFailed != 4 || st.TasksClaimed != 4 || st.InFlight != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestWorkerRegistersHeartbeatsAndDeregisters(t *testing.T) {
	s, c := newScripted(t)
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Concurrency: 4, PollWait: 50 * time.Millisecond, Labels: map[string]string{"zone": "a"}})
	release := make(chan struct{})
	w.Handle("hold", func(ctx context.Context, t *Task) (any, error) { <-release; return "ok", nil })
	s.add("task_a", "hold")
	s.add("task_b", "hold")
	stop := runWorker(t, w)
	waitUntil(t, "a heartbeat listing both tasks", func() bool {
		for _, r := range s.sent("POST", "/workers/w1/heartbeat") {
			ids, _ := r.Body["active_task_ids"].([]any)
			if len(ids) == 2 && ids[0] == "task_a" && ids[1] == "task_b" && r.Body["state"] == "running" {
				return true
			}
		}
		return false
	})
	// With two of four slots held, polls ask for exactly the two free ones (P-SDK-3).
	waitUntil(t, "a poll for 2 free slots", func() bool {
		for _, r := range s.sent("POST", "/poll/batch") {
			if r.Body["batch_size"] == float64(2) && r.Body["worker_id"] == "w1" && r.Body["wait_ms"] == float64(50) {
				return true
			}
		}
		return false
	})
	close(release)
	waitUntil(t, "two completions", func() bool { return w.Stats().TasksCompleted == 2 })
	stop()
	reg := s.sent("POST", "/workers")[0].Body
	if reg["worker_id"] != "w1" || reg["concurrency"] != float64(4) || reg["sdk"] != "orch8-go/"+Version ||
		reg["labels"].(map[string]any)["zone"] != "a" || fmt.Sprint(reg["handlers"]) != "[hold]" {
		t.Errorf("registration %v", reg)
	}
	if len(s.sent("DELETE", "/workers/w1")) != 1 {
		t.Error("no deregistration")
	}
}

func TestWorkerLeaseLostFromHeartbeatSendsNothing(t *testing.T) {
	s, c := newScripted(t)
	s.hbAnswer = func(id string) (bool, bool) { return id == "task_lost", id == "task_cancelled" }
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	causes := make(chan error, 2)
	w.Handle("block", func(ctx context.Context, t *Task) (any, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return "stale", nil
	})
	s.add("task_lost", "block")
	s.add("task_cancelled", "block")
	stop := runWorker(t, w)
	got := map[error]bool{<-causes: true, <-causes: true}
	waitUntil(t, "both runs to end", func() bool { return w.Stats().InFlight == 0 })
	stop()
	if !got[ErrLeaseLost] || !got[ErrTaskCancelled] {
		t.Fatalf("causes %v", got)
	}
	if n := len(s.sent("POST", "/complete")) + len(s.sent("POST", "/fail")) + len(s.batches()); n != 0 {
		t.Fatalf("%d results sent for lost tasks", n)
	}
	if st := w.Stats(); st.TasksLeaseLost != 1 || st.TasksCancelled != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWorkerRedeliversResultThroughOutage(t *testing.T) {
	s, c := newScripted(t)
	s.result = func(path string, n int) int {
		if n <= 5 { // longer than the client's own 3 retries
			return 503
		}
		return 200
	}
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return "ok", nil })
	s.add("task_1", "echo")
	stop := runWorker(t, w)
	waitUntil(t, "the completion to land", func() bool { return w.Stats().TasksCompleted == 1 })
	stop()
	if n := len(s.sent("POST", "/workers/tasks/complete/batch")); n != 6 {
		t.Fatalf("complete/batch sent %d times, want 6", n)
	}
}

func TestWorkerRunNeedsHandlers(t *testing.T) {
	_, c := newScripted(t)
	if err := mustWorker(t, c, WorkerOptions{}).Run(context.Background()); err == nil {
		t.Fatal("Run without handlers succeeded")
	}
}

func TestWorkerOptionDefaults(t *testing.T) {
	o := WorkerOptions{}.withDefaults()
	if o.Concurrency != 10 || o.GracePeriod != 25*time.Second || o.PollWait != 30*time.Second || o.WorkerID == "" {
		t.Fatalf("defaults %+v", o)
	}
	if workerIDUnsafe.MatchString(o.WorkerID) {
		t.Fatalf("worker id %q has characters the contract rejects", o.WorkerID)
	}
}

// mustWorker is NewWorker for options a test knows to be valid.
func mustWorker(t *testing.T, c *Client, opts WorkerOptions) *Worker {
	t.Helper()
	w, err := NewWorker(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
