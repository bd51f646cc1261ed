package orch8

// Unit tests of failure reports, configuration errors and shutdown wording (P-SDK-27,
// P-SDK-28, P-SDK-29), against the scripted HTTP layer of worker_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// logBuffer collects a worker's text log lines; safe for the worker's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// line is the first log line holding every part, or "".
func (b *logBuffer) line(parts ...string) string {
	for _, l := range strings.Split(b.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return l
		}
	}
	return ""
}

// P-SDK-27: a message over 16,384 bytes keeps its first 16,384 bytes, never cut inside a
// character, then " [truncated from N bytes]"; a shorter one is untouched.
func TestP_SDK_27_MessageIsCutAtACharacterBoundary(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		keep int // bytes kept: the last whole character at or before 16,384
	}{
		{strings.Repeat("€", 6000), 16383},       // 3 bytes each: 16,384 falls inside one
		{"a" + strings.Repeat("😀", 5000), 16381}, // 4 bytes each after one ASCII byte
		{strings.Repeat("x", 1<<21), 16384},
	} {
		got := boundFailure(TaskFailureReport{Error: tc.msg}).Error
		want := tc.msg[:tc.keep] + " [truncated from " + itoa(len(tc.msg)) + " bytes]"
		if got != want || !utf8.ValidString(got) {
			t.Errorf("%d-byte message cut to %q...%q", len(tc.msg), got[:8], got[len(got)-40:])
		}
	}
	exact := strings.Repeat("é", maxFailMessageBytes/2)
	if got := boundFailure(TaskFailureReport{Error: exact}).Error; got != exact {
		t.Error("a message of exactly 16,384 bytes was changed")
	}
}

// P-SDK-27: details whose JSON is over 65,536 bytes become {truncated, bytes, preview},
// the preview cut to 4,096 bytes at a character boundary; smaller details are untouched.
func TestP_SDK_27_LargeDetailsAreReplaced(t *testing.T) {
	details := JSONObject{"blob": strings.Repeat("€", 30000)}
	raw, _ := json.Marshal(details)
	got := boundFailure(TaskFailureReport{Details: details}).Details
	preview, _ := got["preview"].(string)
	if got["truncated"] != true || got["bytes"] != len(raw) || len(got) != 3 {
		t.Fatalf("details %v", got)
	}
	if !utf8.ValidString(preview) || len(preview) > failDetailsPreviewBytes || len(preview) < failDetailsPreviewBytes-3 ||
		!strings.HasPrefix(string(raw), preview) {
		t.Fatalf("preview of %d bytes: %q", len(preview), preview[len(preview)-10:])
	}
	small := JSONObject{"blob": strings.Repeat("y", 60000)}
	if got := boundFailure(TaskFailureReport{Details: small}).Details; got["blob"] != small["blob"] {
		t.Fatal("details under 65,536 bytes were changed")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// hugeError is a handler failing with a 2 MiB message, large details and a checkpoint.
func hugeError(ctx context.Context, t *Task) (any, error) {
	return nil, &PermanentError{Err: errors.New(strings.Repeat("x", 2<<20)), Code: "too_big",
		Details: map[string]any{"blob": strings.Repeat("y", 100000)}, Checkpoint: map[string]any{"blob": strings.Repeat("z", 2<<20)}}
}

// P-SDK-27: a fail refused as a whole (413) is re-sent once without checkpoint, with
// details {report_refused: {status, code}} and its code and bounded message unchanged.
func TestP_SDK_27_RefusedFailIsResentWithoutCheckpoint(t *testing.T) {
	s, c := newScripted(t)
	s.result = func(path string, n int) int {
		if n == 1 {
			return 413
		}
		return 200
	}
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond})
	w.Handle("huge", hugeError)
	s.add("task_1", "huge")
	stop := runWorker(t, w)
	waitUntil(t, "the fail", func() bool { return w.Stats().TasksFailed == 1 })
	stop()
	fails := s.sent("POST", "/fail")
	if len(fails) != 2 {
		t.Fatalf("%d fail requests, want 2", len(fails))
	}
	first, second := fails[0].Body, fails[1].Body
	msg, _ := first["error"].(string)
	if !strings.HasSuffix(msg, " [truncated from 2097152 bytes]") || len(msg) > maxFailMessageBytes+40 {
		t.Fatalf("first message of %d bytes ends %q", len(msg), msg[len(msg)-40:])
	}
	if d, _ := first["details"].(map[string]any); d["truncated"] != true || first["checkpoint"] == nil {
		t.Fatalf("first fail: details %v, checkpoint sent %v", d, first["checkpoint"] != nil)
	}
	d, _ := second["details"].(map[string]any)
	if second["checkpoint"] != nil || second["error"] != msg || second["code"] != "too_big" || second["retryable"] != false ||
		jsonText(d) != `{"report_refused":{"code":"payload_too_large","status":413}}` {
		t.Fatalf("re-sent fail: code %v details %v checkpoint %v", second["code"], d, second["checkpoint"] != nil)
	}
	if st := w.Stats(); st.TasksLeaseLost != 0 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func jsonText(v any) string { b, _ := json.Marshal(v); return string(b) }

// P-SDK-27: a second refusal gives the task up: logged at error with both refusals and
// counted as lease lost; nothing more is sent.
func TestP_SDK_27_SecondRefusalGivesTheTaskUp(t *testing.T) {
	s, c := newScripted(t)
	s.result = func(path string, n int) int { return 413 }
	var logs logBuffer
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", PollWait: 50 * time.Millisecond, Logger: logs.logger()})
	w.Handle("huge", hugeError)
	s.add("task_1", "huge")
	stop := runWorker(t, w)
	waitUntil(t, "the task given up", func() bool { return w.Stats().TasksLeaseLost == 1 })
	stop()
	if n := len(s.sent("POST", "/fail")); n != 2 {
		t.Fatalf("%d fail requests, want 2", n)
	}
	if l := logs.line("level=ERROR", "event=given_up", "refused twice", "operation=fail", "HTTP 413 payload_too_large: ", "; then HTTP 413 payload_too_large"); l == "" {
		t.Fatalf("no error line with both refusals in:\n%s", logs.String())
	}
	if st := w.Stats(); st.TasksFailed != 0 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// P-SDK-28: a registration answered 501 (not a problem) or 404 ends Run at once with an
// error naming the server URL, the status and the code (http_<status> without a problem).
func TestP_SDK_28_RegistrationRefusedStopsRun(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string
	}{{501, "HTTP 501 http_501"}, {404, "HTTP 404 not_found"}, {405, "HTTP 405 method_not_allowed"}} {
		s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if tc.status == 501 {
				w.WriteHeader(501)
				_, _ = io.WriteString(w, "Unsupported method ('POST')")
				return
			}
			writeProblem(w, tc.status, map[int]string{404: "not_found", 405: "method_not_allowed"}[tc.status])
		})
		w := mustWorker(t, c, WorkerOptions{WorkerID: "w1"})
		w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return nil, nil })
		done := make(chan error, 1)
		go func() { done <- w.Run(context.Background()) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), s.srv.URL) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%d: Run returned %v; want the URL and %q", tc.status, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d: Run did not return", tc.status)
		}
		if n := len(s.requests()); n != 1 {
			t.Fatalf("%d: %d requests, want the registration alone, not retried", tc.status, n)
		}
	}
}

// P-SDK-29: a handler still running when the grace period runs out is failed with
// "worker <id> shut down: grace period of <N> ms ended"; StopNow names itself.
func TestP_SDK_29_ShutdownMessageNamesTheGracePeriod(t *testing.T) {
	for _, now := range []bool{false, true} {
		s, c := newScripted(t)
		w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", GracePeriod: 100 * time.Millisecond, PollWait: 50 * time.Millisecond})
		if now {
			w.opts.GracePeriod = time.Minute
		}
		started := make(chan struct{})
		w.Handle("slow", func(ctx context.Context, t *Task) (any, error) { close(started); <-ctx.Done(); return nil, ctx.Err() })
		s.add("task_1", "slow")
		stop := runWorker(t, w)
		<-started
		if now {
			w.Stop()
			w.StopNow()
		}
		stop()
		want := map[bool]string{false: "worker w1 shut down: grace period of 100 ms ended",
			true: "worker w1 shut down: StopNow ended the grace period"}[now]
		if b := s.failBodies()["task_1"]; b["error"] != want || b["code"] != CodeShutdown {
			t.Fatalf("fail body %v, want error %q", b, want)
		}
	}
}

// P-SDK-29: once Run returned, no delivery of ours is left running: a fail waiting out a
// Retry-After of 30 s gives the task up instead (counted as lease lost).
func TestP_SDK_29_NothingOutlivesRun(t *testing.T) {
	s, c := newScripted(t)
	s.result = func(path string, n int) int { return 503 }
	s.resultRetryAfter = "30"
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", GracePeriod: 100 * time.Millisecond, PollWait: 50 * time.Millisecond})
	w.slack = 100 * time.Millisecond
	c.cfg.MaxRetries = -1 // the worker's own re-send waits the Retry-After, not the client
	w.Handle("fails", func(ctx context.Context, t *Task) (any, error) { return nil, errors.New("boom") })
	s.add("task_1", "fails")
	var abandoned atomic.Int32
	w.opts.Hooks.OnTaskAbandoned = func(TaskAbandonedEvent) { abandoned.Add(1) }
	stop := runWorker(t, w)
	waitUntil(t, "the first fail", func() bool { return len(s.sent("POST", "/fail")) == 1 })
	stop()
	// Run has returned: the give-up is counted and its hook has run (P-SDK-11), at once.
	if st := w.Stats(); st.TasksLeaseLost != 1 || st.InFlight != 0 || abandoned.Load() != 1 {
		t.Fatalf("when Run returned: stats %+v, OnTaskAbandoned calls %d", st, abandoned.Load())
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	for strings.Contains(allStacks(), "(*Worker).deliverFailure") {
		if time.Now().After(deadline) {
			t.Fatalf("a fail delivery still runs 500 ms after Run returned:\n%s", allStacks())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// P-SDK-22: a worker that cannot reach its server logs a warning naming the server URL and
// the innermost cause, not only the HTTP library's wrapper.
func TestP_SDK_22_TransportWarningNamesURLAndCause(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	c, err := NewClient(Config{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", Logger: logs.logger()})
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return nil, nil })
	stop := runWorker(t, w)
	want := `cause="connection_error: no answer from ` + base + `: connection refused"`
	waitUntil(t, "the warning", func() bool {
		return logs.line("level=WARN", "registration failed", "event=outage", "operation=register", "url="+base, want) != ""
	})
	stop()
}

func TestP_SDK_27_NulInAMessageBecomesReplacementChar(t *testing.T) {
	// P-ERR-5 refuses NUL in any string: the report lands with U+FFFD instead.
	got := boundFailure(TaskFailureReport{Error: "a\x00b\x00"}).Error
	if got != "a\uFFFDb\uFFFD" {
		t.Fatalf("message %q, want NUL replaced by U+FFFD", got)
	}
}

func TestP_SDK_27_DetailsAreMeasuredAsCompactJSONWithoutHTMLEscapes(t *testing.T) {
	// The same byte count as Python and TypeScript: < > & as themselves.
	big := strings.Repeat("<&>", 30000)
	rep := boundFailure(TaskFailureReport{Error: "x", Details: JSONObject{"blob": big}})
	d := rep.Details
	if d["bytes"] != len(`{"blob":""}`)+len(big) {
		t.Fatalf("bytes %v, want %d", d["bytes"], len(`{"blob":""}`)+len(big))
	}
}
