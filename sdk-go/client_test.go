package orch8

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorded is one request the fake HTTP layer saw.
type recorded struct {
	Method, Path, Auth, UA, ContentType string
	Body                                map[string]any
}

// stub answers every request with fn and records it.
type stub struct {
	mu   sync.Mutex
	reqs []recorded
	srv  *httptest.Server
}

func newStub(t *testing.T, fn func(w http.ResponseWriter, r *http.Request, n int)) (*stub, *Client) {
	t.Helper()
	s := &stub{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rec := recorded{Method: r.Method, Path: r.URL.RequestURI(), Auth: r.Header.Get("Authorization"),
			UA: r.Header.Get("User-Agent"), ContentType: r.Header.Get("Content-Type")}
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &rec.Body); err != nil {
				t.Errorf("request body is not a JSON object: %q", raw)
			}
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, rec)
		n := len(s.reqs)
		s.mu.Unlock()
		fn(w, r, n)
	}))
	t.Cleanup(s.srv.Close)
	c, err := NewClient(Config{BaseURL: s.srv.URL, APIKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func (s *stub) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeProblem(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "urn:orch8:problem:" + code, "title": code,
		"status": status, "detail": "detail of " + code, "code": code,
		"errors": []map[string]string{{"pointer": "/priority", "detail": "must be integer"}}})
}

const claimedJSON = `{"id":"task_1","handler_name":"echo","queue_name":"default","params":{"x":1},
"context":{"step":"a"},"headers":{"h":"v"},"priority":0,"attempt":1,"max_attempts":3,
"lease":{"id":"lease_1","worker_id":"w1","attempt":1,"expires_at":"2030-01-01T00:00:00.000Z"},
"checkpoint":null,"good_until":null,"created_at":"2026-11-21T10:30:00.000Z",
"metadata":{"attempt":1,"max_attempts":3,"created_at":"2026-11-21T10:30:00.000Z"}}`

func TestPollTaskRequestShapeAndHeaders(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, claimedJSON)
	})
	task, err := c.PollTask(context.Background(), PollOptions{HandlerNames: []string{"echo"}, WorkerID: Ptr("w1"), WaitMs: Ptr(0)})
	if err != nil {
		t.Fatal(err)
	}
	if task == nil || task.ID != "task_1" || task.Lease.ID != "lease_1" || task.Params["x"] != float64(1) {
		t.Fatalf("unexpected task %+v", task)
	}
	r := s.requests()[0]
	if r.Method != "POST" || r.Path != "/workers/tasks/poll" {
		t.Errorf("got %s %s", r.Method, r.Path)
	}
	if r.Auth != "Bearer k1" || r.UA != "orch8-go/"+Version || r.ContentType != "application/json" {
		t.Errorf("headers: auth=%q ua=%q ct=%q", r.Auth, r.UA, r.ContentType)
	}
	if got := r.Body["worker_id"]; got != "w1" {
		t.Errorf("worker_id = %v", got)
	}
	if names, _ := r.Body["handler_names"].([]any); len(names) != 1 || names[0] != "echo" {
		t.Errorf("handler_names = %v", r.Body["handler_names"])
	}
	if _, has := r.Body["lease_ms"]; has {
		t.Errorf("unset optional field sent: %v", r.Body)
	}
}

func TestPollTaskNoContentIsNilNil(t *testing.T) {
	_, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) { w.WriteHeader(http.StatusNoContent) })
	task, err := c.PollTask(context.Background(), PollOptions{})
	if task != nil || err != nil {
		t.Fatalf("want (nil, nil) on 204, got (%v, %v)", task, err)
	}
}

func TestCompleteAndFailBodies(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, map[string]any{"task_id": "task_1", "status": "completed", "attempt": 1,
			"attempts_left": 2, "next_attempt_at": nil, "error_code": nil})
	})
	ctx := context.Background()
	out, err := c.CompleteTask(ctx, "task_1", TaskCompletion{LeaseID: Ptr("lease_1"), Output: map[string]any{"ok": true}})
	if err != nil || out.Status != StatusCompleted {
		t.Fatalf("complete: %v %+v", err, out)
	}
	_, err = c.FailTask(ctx, "task_1", TaskFailureReport{Error: "boom", Retryable: Ptr(true), Code: Ptr("x"), RetryAfterMs: Ptr(1500)})
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.requests()
	if reqs[0].Path != "/workers/tasks/task_1/complete" || reqs[0].Body["lease_id"] != "lease_1" ||
		reqs[0].Body["output"].(map[string]any)["ok"] != true {
		t.Errorf("complete request %+v", reqs[0])
	}
	b := reqs[1].Body
	if reqs[1].Path != "/workers/tasks/task_1/fail" || b["error"] != "boom" || b["retryable"] != true ||
		b["code"] != "x" || b["retry_after_ms"] != float64(1500) {
		t.Errorf("fail request %+v", reqs[1])
	}
}

func TestProblemCodesMapToSentinels(t *testing.T) {
	cases := []struct {
		status int
		code   string
		want   error
	}{
		{400, "malformed_json", ErrValidation},
		{400, "payload_too_deep", ErrValidation},  // P-ERR-5
		{400, "unsupported_value", ErrValidation}, // P-ERR-5
		{431, "headers_too_large", ErrValidation}, // P-HTTP-1
		{408, "request_timeout", ErrUnavailable},  // P-HTTP-2: an outage (P-SDK-16)
		{401, "unauthorized", ErrUnauthorized},
		{403, "forbidden", ErrForbidden},
		{404, "not_found", ErrNotFound},
		{409, "lease_lost", ErrLeaseLost},
		{409, "task_cancelled", ErrTaskCancelled},
		{409, "invalid_state", ErrConflict},
		{409, "clock_not_controllable", ErrConflict}, // P-CLOCK-1
		{413, "payload_too_large", ErrValidation},
		{415, "unsupported_media_type", ErrValidation},
		{422, "validation_error", ErrValidation},
		{429, "rate_limited", ErrRateLimited},
		{503, "unavailable", ErrUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			_, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) { writeProblem(w, tc.status, tc.code) })
			c.cfg.MaxRetries = 0
			_, err := c.GetTask(context.Background(), "task_1")
			if !errors.Is(err, tc.want) {
				t.Fatalf("errors.Is(%v, %v) = false", err, tc.want)
			}
			var pe *ProblemError
			if !errors.As(err, &pe) || pe.Code != tc.code || pe.Status != tc.status || pe.Detail != "detail of "+tc.code ||
				len(pe.Errors) != 1 || pe.Errors[0].Pointer != "/priority" {
				t.Fatalf("problem %+v", pe)
			}
			for _, other := range []error{ErrNotFound, ErrLeaseLost, ErrTaskCancelled, ErrConflict, ErrValidation, ErrUnauthorized, ErrForbidden, ErrRateLimited, ErrUnavailable} {
				if other != tc.want && errors.Is(err, other) {
					t.Errorf("%s also matches %v", tc.code, other)
				}
			}
		})
	}
}

func TestInternalAndMethodNotAllowedAreOnlyProblemErrors(t *testing.T) {
	for _, code := range []string{"internal", "method_not_allowed"} {
		_, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) { writeProblem(w, 500, code) })
		_, err := c.ServerInfo(context.Background())
		var pe *ProblemError
		if !errors.As(err, &pe) || pe.Code != code {
			t.Fatalf("%s: %v", code, err)
		}
		if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrValidation) {
			t.Errorf("%s matched a sentinel", code)
		}
	}
}

func TestNonProblemBodyFallsBackOnStatus(t *testing.T) {
	_, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
	})
	c.cfg.MaxRetries = 0
	_, err := c.GetTask(context.Background(), "task_1")
	var pe *ProblemError
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &pe) || pe.Status != 502 {
		t.Fatalf("got %v", err)
	}
}

func TestConnectionErrorIsUnavailable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := NewClient(Config{BaseURL: url, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetTask(context.Background(), "task_1")
	var pe *ProblemError
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &pe) || pe.Code != CodeConnectionError || pe.Err == nil {
		t.Fatalf("got %v", err)
	}
}

func TestSafeCallsRetryOn503ThenSucceed(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n < 3 {
			w.Header().Set("Retry-After", "0")
			writeProblem(w, 503, "unavailable")
			return
		}
		writeJSON(w, 200, map[string]any{"task_id": "task_1", "status": "completed", "attempt": 1,
			"attempts_left": 2, "next_attempt_at": nil, "error_code": nil})
	})
	if _, err := c.CompleteTask(context.Background(), "task_1", TaskCompletion{}); err != nil {
		t.Fatal(err)
	}
	if n := len(s.requests()); n != 3 {
		t.Fatalf("want 3 requests (2 retries), got %d", n)
	}
}

func TestRetriesStopAfterThree(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) { writeProblem(w, 429, "rate_limited") })
	_, err := c.GetWorker(context.Background(), "w1")
	if !errors.Is(err, ErrRateLimited) {
		t.Fatal(err)
	}
	if n := len(s.requests()); n != 1+DefaultMaxRetries {
		t.Fatalf("want %d requests, got %d", 1+DefaultMaxRetries, n)
	}
}

func TestUnsafeCallsAreNotRetried(t *testing.T) {
	var hits atomic.Int32
	_, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		hits.Add(1)
		writeProblem(w, 503, "unavailable")
	})
	ctx := context.Background()
	_, _ = c.PollTasks(ctx, PollBatchOptions{})
	_, _ = c.PollTask(ctx, PollOptions{})
	_, _ = c.Enqueue(ctx, NewTask{HandlerName: "echo"})
	_, _ = c.CancelTask(ctx, "task_1", TaskCancellation{})
	_, _ = c.RetryTask(ctx, "task_1", TaskRetry{})
	_, _ = c.CompleteTaskManually(ctx, "task_1", ManualCompletion{})
	_, _ = c.FailTaskManually(ctx, "task_1", ManualFailure{Error: "x"})
	_, _ = c.QuietWorker(ctx, "w1")
	if got := hits.Load(); got != 8 {
		t.Fatalf("want exactly one request per unsafe call (8), got %d", got)
	}
	hits.Store(0)
	_, _ = c.Enqueue(ctx, NewTask{HandlerName: "echo", IdempotencyKey: Ptr("k")})
	if got := hits.Load(); got != 1+DefaultMaxRetries {
		t.Fatalf("enqueue with an idempotency_key: want %d requests, got %d", 1+DefaultMaxRetries, got)
	}
}

func TestConflictIsNotRetried(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) { writeProblem(w, 409, "lease_lost") })
	_, err := c.Heartbeat(context.Background(), "task_1", TaskHeartbeat{})
	if !errors.Is(err, ErrLeaseLost) || len(s.requests()) != 1 {
		t.Fatalf("err=%v requests=%d", err, len(s.requests()))
	}
}

func TestRequestTimeoutIsRetriedAsConnectionError(t *testing.T) {
	release := make(chan struct{})
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		writeJSON(w, 200, map[string]any{"workers": []any{}})
	})
	defer close(release)
	c.cfg.Timeout = 100 * time.Millisecond
	if _, err := c.ListWorkers(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := len(s.requests()); n != 2 {
		t.Fatalf("want 2 requests, got %d", n)
	}
}

func TestCallerCancellationIsNotAConnectionError(t *testing.T) {
	_, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := c.PollTasks(ctx, PollBatchOptions{})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v", err)
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	t.Setenv("ORCH8_URL", "http://example.invalid:9/")
	t.Setenv("ORCH8_API_KEY", "envkey")
	c, err := NewClient(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != "http://example.invalid:9" || c.cfg.APIKey != "envkey" || c.cfg.Timeout != 10*time.Second {
		t.Fatalf("config %+v", c.cfg)
	}
	t.Setenv("ORCH8_URL", "")
	c, _ = NewClient(Config{})
	if c.BaseURL() != DefaultBaseURL {
		t.Fatalf("default base URL %q", c.BaseURL())
	}
	if _, err := NewClient(Config{BaseURL: "not a url"}); err == nil {
		t.Fatal("invalid URL accepted")
	}
}

func TestRetryAfterParsing(t *testing.T) {
	if d := parseRetryAfter("2"); d != 2*time.Second {
		t.Errorf("seconds: %v", d)
	}
	if d := parseRetryAfter(time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)); d <= time.Second || d > 3*time.Second {
		t.Errorf("date: %v", d)
	}
	if d := parseRetryAfter("soon"); d != 0 {
		t.Errorf("garbage: %v", d)
	}
}

func TestStatusHelper(t *testing.T) {
	for status, want := range map[int]bool{408: true, 429: true, 500: true, 503: true, 599: true, 400: false, 401: false, 404: false, 409: false, 422: false} {
		if IsRetryableStatus(status) != want {
			t.Errorf("IsRetryableStatus(%d) != %v", status, want)
		}
	}
}

// P-SDK-16: one classifier; exactly these answers are outages.
func TestOutageClassifier(t *testing.T) {
	for status, want := range map[int]bool{408: true, 429: true, 500: true, 502: true, 503: true, 504: true,
		501: false, 505: false, 400: false, 401: false, 404: false, 409: false, 413: false, 422: false} {
		if got := IsOutage(&ProblemError{Status: status, Code: "x"}); got != want {
			t.Errorf("IsOutage(%d) = %v, want %v", status, got, want)
		}
	}
	if !IsOutage(connectionError(errors.New("connection refused"), "http://h", 0)) {
		t.Error("a transport failure is an outage")
	}
	if IsOutage(context.Canceled) || IsOutage(errors.New("plain")) {
		t.Error("a non-problem error is not an outage")
	}
}

func TestBackoffIsCappedFullJitter(t *testing.T) {
	b := backoff{base: 500 * time.Millisecond, cap: 30 * time.Second}
	for i := 0; i < 20; i++ {
		ceiling := min(30*time.Second, 500*time.Millisecond<<i)
		if d := b.next(); d < 0 || d >= ceiling {
			t.Fatalf("wait %d = %v, want [0, %v)", i, d, ceiling)
		}
	}
}

// P-SDK-16: the client waits out a Retry-After (plus at most 10%) instead of its backoff,
// and surfaces one above 30 s at once, carrying it.
func TestClientRetryAfter(t *testing.T) {
	var times []time.Time
	var mu sync.Mutex
	_, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			writeProblem(w, 408, "request_timeout")
			return
		}
		writeJSON(w, 200, map[string]any{"status": "ok", "checks": map[string]any{}})
	})
	if _, err := c.HealthLive(context.Background()); err != nil {
		t.Fatal(err)
	}
	if gap := times[1].Sub(times[0]); len(times) != 2 || gap < time.Second || gap > 1500*time.Millisecond {
		t.Fatalf("%d requests, retried after %v; want 2, Retry-After 1 s + 0-10%%", len(times), times[1].Sub(times[0]))
	}

	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "31")
		writeProblem(w, 503, "unavailable")
	})
	_, err := c.GetTask(context.Background(), "task_1")
	var pe *ProblemError
	if !errors.As(err, &pe) || pe.RetryAfter != 31*time.Second || len(s.requests()) != 1 {
		t.Fatalf("err %v, %d requests; want the 503 at once with RetryAfter 31s", err, len(s.requests()))
	}
}

// P-SDK-1: health, readiness, metrics and server info each have their method.
func TestHealthAndMetricsMethods(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.URL.Path {
		case "/metrics":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "orch8_up 1\n")
		case "/health/ready":
			writeProblem(w, 400, "not_ready")
		default:
			writeJSON(w, 200, map[string]any{"status": "ok", "checks": map[string]any{}})
		}
	})
	ctx := context.Background()
	if m, err := c.Metrics(ctx); err != nil || m != "orch8_up 1\n" {
		t.Fatalf("metrics %q %v", m, err)
	}
	if h, err := c.HealthLive(ctx); err != nil || h.Status != "ok" {
		t.Fatalf("live %+v %v", h, err)
	}
	if _, err := c.HealthReady(ctx); err == nil {
		t.Fatal("a 400 readiness answer is an error")
	}
	var paths []string
	for _, r := range s.requests() {
		paths = append(paths, r.Path)
	}
	if fmt.Sprint(paths) != "[/metrics /health/live /health/ready]" {
		t.Fatalf("paths %v", paths)
	}
}
