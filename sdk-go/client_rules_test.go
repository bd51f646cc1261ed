package orch8

// Unit tests of the client's URL check, Retry-After budget, error map and transport error
// text (P-SDK-1, P-SDK-2, P-SDK-16, P-SDK-22, section 12).

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordSleeps replaces the client's retry sleep: the waits are recorded, not slept, so a
// 30 s budget is tested in milliseconds.
func recordSleeps(c *Client) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) bool {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err() == nil
	}
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), waits...)
	}
}

func enqueued(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(201)
	_, _ = w.Write([]byte(`{"id":"task_1","handler_name":"echo","queue_name":"default","status":"pending"}`))
}

// P-SDK-2: an idempotent enqueue answered 429 Retry-After: 1 five times, then 201,
// succeeds: Retry-After answers are not limited to 3 retries.
func TestP_SDK_2_RetryAfterIsNotLimitedToThreeRetries(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n <= 5 {
			w.Header().Set("Retry-After", "1")
			writeProblem(w, 429, "rate_limited")
			return
		}
		enqueued(w)
	})
	waits := recordSleeps(c)
	rec, err := c.Enqueue(context.Background(), NewTask{HandlerName: "echo", IdempotencyKey: Ptr("k1")})
	if err != nil || rec.ID != "task_1" {
		t.Fatalf("enqueue: %+v, %v", rec, err)
	}
	if n := len(s.requests()); n != 6 {
		t.Fatalf("%d requests, want 6 (5 retries after Retry-After)", n)
	}
	for _, d := range waits() {
		if d < time.Second || d > 1100*time.Millisecond {
			t.Fatalf("waits %v, want Retry-After 1 s + 0-10%% each", waits())
		}
	}
}

// P-SDK-2: a sustained 429 Retry-After: 1 is ridden out while the delays add up to at
// most 30 s (30 retries), then the last error surfaces; Retry-After: 7 stops after 4
// waits (28 s), since a fifth would make 35 s.
func TestP_SDK_2_SustainedRetryAfterStopsAtThe30sBudget(t *testing.T) {
	for _, tc := range []struct {
		retryAfter string
		waits      int
	}{{"1", 30}, {"7", 4}, {"30", 1}} {
		t.Run("Retry-After "+tc.retryAfter, func(t *testing.T) {
			s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Retry-After", tc.retryAfter)
				writeProblem(w, 429, "rate_limited")
			})
			waits := recordSleeps(c)
			_, err := c.Enqueue(context.Background(), NewTask{HandlerName: "echo", IdempotencyKey: Ptr("k1")})
			var pe *ProblemError
			if !errors.Is(err, ErrRateLimited) || !errors.As(err, &pe) || pe.RetryAfter <= 0 {
				t.Fatalf("got %v, want the last 429 carrying its Retry-After", err)
			}
			if got := len(waits()); got != tc.waits || len(s.requests()) != tc.waits+1 {
				t.Fatalf("%d waits and %d requests, want %d and %d", got, len(s.requests()), tc.waits, tc.waits+1)
			}
		})
	}
}

// P-SDK-2: outages without Retry-After keep the 3-retry limit, even after Retry-After
// answers of the same call.
func TestP_SDK_2_OutagesWithoutRetryAfterKeepThreeRetries(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n <= 2 {
			w.Header().Set("Retry-After", "1")
		}
		writeProblem(w, 503, "unavailable")
	})
	recordSleeps(c)
	_, err := c.GetTask(context.Background(), "task_1")
	if !errors.Is(err, ErrUnavailable) || len(s.requests()) != 2+1+DefaultMaxRetries {
		t.Fatalf("%v after %d requests, want 2 Retry-After retries then %d more", err, len(s.requests()), DefaultMaxRetries)
	}
}

// P-SDK-1: a base URL that is not absolute http(s) with a host is refused by NewClient,
// naming the value, before any request.
func TestP_SDK_1_BaseURLMustBeAbsoluteHTTP(t *testing.T) {
	for _, bad := range []string{"127.0.0.1:3001", "localhost", "ftp://x", "http://", "http://:3001", "/", "  ", "http://h:0", "localhost:3001/x"} {
		c, err := NewClient(Config{BaseURL: bad})
		if err == nil || c != nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		if !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("%q: the error does not name the value: %v", bad, err)
		}
	}
	t.Setenv("ORCH8_URL", "localhost")
	if _, err := NewClient(Config{}); err == nil || !strings.Contains(err.Error(), `"localhost" (ORCH8_URL)`) {
		t.Errorf("ORCH8_URL=localhost: %v", err)
	}
	for _, good := range []string{"http://localhost:3001", "https://orch8.example.com/", "http://[::1]:3001", "http://10.0.0.1"} {
		if _, err := NewClient(Config{BaseURL: good}); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
}

// Section 12: the codes of P-ERR-5, P-HTTP-1 and P-HTTP-2 map onto the sentinels (also
// without a problem body), and only the 408 is an outage (P-SDK-16). The answers over
// HTTP are in TestProblemCodesMapToSentinels.
func TestNewProblemCodesAreClassified(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
		want   error
	}{
		{400, "payload_too_deep", ErrValidation},
		{400, "unsupported_value", ErrValidation},
		{431, "headers_too_large", ErrValidation},
		{408, "request_timeout", ErrUnavailable},
		{431, "unknown", ErrValidation}, // a 431 without a problem body
		{408, "unknown", ErrUnavailable},
	} {
		pe := &ProblemError{Status: tc.status, Code: tc.code}
		if !errors.Is(pe, tc.want) {
			t.Errorf("%d %s does not match %v", tc.status, tc.code, tc.want)
		}
		if IsOutage(pe) != (tc.status == 408) {
			t.Errorf("IsOutage(%d %s) = %v", tc.status, tc.code, IsOutage(pe))
		}
	}
}

// P-SDK-22: a transport error names the server URL and the innermost cause
// ("connection refused"), not only the HTTP library's wrapper.
func TestP_SDK_22_TransportErrorNamesURLAndCause(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	c, err := NewClient(Config{BaseURL: base, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetTask(context.Background(), "task_1")
	var pe *ProblemError
	if !errors.As(err, &pe) || pe.Detail != "no answer from "+base+": connection refused" {
		t.Fatalf("detail %q (err %v)", pe.Detail, err)
	}

	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer stall.Close()
	c, _ = NewClient(Config{BaseURL: stall.URL, MaxRetries: -1, Timeout: 50 * time.Millisecond})
	_, err = c.ListWorkers(context.Background(), nil)
	if !errors.As(err, &pe) || pe.Detail != "no answer from "+stall.URL+": timed out after 50ms" {
		t.Fatalf("detail %q (err %v)", pe.Detail, err)
	}
}
