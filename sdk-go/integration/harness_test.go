package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/internal/refserver"
)

// refServer is the one Go server launcher (internal/refserver), shared with orch8otel.
type refServer struct{ *refserver.Server }

func (s *refServer) start() { s.Start() }
func (s *refServer) stop()  { s.Stop() }

// startServer starts a server with fast test settings; extra flags override them.
func startServer(t *testing.T, extra ...string) *refServer {
	t.Helper()
	return &refServer{refserver.Start(t, extra...)}
}

func tail(s string, n int) string { return refserver.Tail(s, n) }

// waitFor polls cond every 20 ms until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sentRequest is one request the SDK sent, as seen by the recording transport.
type sentRequest struct {
	Method, Path string
	Body         map[string]any
}

// recorder is an http.RoundTripper that remembers every request the SDK makes.
type recorder struct {
	mu   sync.Mutex
	reqs []sentRequest
}

func (rec *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	sr := sentRequest{Method: req.Method, Path: req.URL.Path}
	if req.Body != nil {
		raw, _ := io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(raw))
		_ = json.Unmarshal(raw, &sr.Body)
	}
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, sr)
	rec.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (rec *recorder) sent(method, path string) []sentRequest {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []sentRequest
	for _, r := range rec.reqs {
		if r.Method == method && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// completionsFor lists the items for taskID that the worker reported through
// POST /workers/tasks/complete/batch (P-SDK-12), in the order they were sent.
func (rec *recorder) completionsFor(taskID string) []map[string]any {
	var out []map[string]any
	for _, r := range rec.sent("POST", "/workers/tasks/complete/batch") {
		items, _ := r.Body["items"].([]any)
		for _, it := range items {
			if m, ok := it.(map[string]any); ok && m["task_id"] == taskID {
				out = append(out, m)
			}
		}
	}
	return out
}

func newClient(t *testing.T, s *refServer, rec *recorder) *orch8.Client {
	t.Helper()
	cfg := orch8.Config{BaseURL: s.URL}
	if rec != nil {
		cfg.HTTPClient = &http.Client{Transport: rec}
	}
	c, err := orch8.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runningWorker is a Worker running on its own goroutine.
type runningWorker struct {
	*orch8.Worker
	cancel context.CancelFunc
	done   chan error
}

// newWorker is NewWorker for options a test knows to be valid.
func newWorker(t *testing.T, c *orch8.Client, opts orch8.WorkerOptions) *orch8.Worker {
	t.Helper()
	w, err := orch8.NewWorker(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func startWorker(t *testing.T, c *orch8.Client, opts orch8.WorkerOptions, handlers map[string]orch8.Handler) *runningWorker {
	t.Helper()
	if opts.WorkerID == "" {
		opts.WorkerID = "go-" + t.Name()
	}
	logs := &refserver.LogBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	w := newWorker(t, c, opts)
	for name, h := range handlers {
		w.Handle(name, h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rw := &runningWorker{Worker: w, cancel: cancel, done: make(chan error, 1)}
	go func() { rw.done <- w.Run(ctx) }()
	t.Cleanup(func() {
		rw.shutdown(t, 60*time.Second)
		if t.Failed() {
			t.Logf("worker log:\n%s", tail(logs.String(), 6000))
		}
	})
	return rw
}

// shutdown cancels Run's context and waits for Run to return; it reports how long that took.
func (rw *runningWorker) shutdown(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	rw.cancel()
	return rw.wait(t, limit, start)
}

func (rw *runningWorker) wait(t *testing.T, limit time.Duration, start time.Time) time.Duration {
	t.Helper()
	select {
	case err, ok := <-rw.done:
		if ok {
			close(rw.done)
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		}
	case <-time.After(limit):
		t.Fatalf("Run did not return within %v", limit)
	}
	return time.Since(start)
}

func enqueue(t *testing.T, c *orch8.Client, task orch8.NewTask) string {
	t.Helper()
	rec, err := c.Enqueue(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	return rec.ID
}

func getTask(t *testing.T, c *orch8.Client, id string) *orch8.TaskRecord {
	t.Helper()
	rec, err := c.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func waitStatus(t *testing.T, c *orch8.Client, id string, want orch8.TaskStatus, timeout time.Duration) *orch8.TaskRecord {
	t.Helper()
	var rec *orch8.TaskRecord
	waitFor(t, timeout, fmt.Sprintf("task %s to be %s", id, want), func() bool {
		rec = getTask(t, c, id)
		return rec.Status == want
	})
	return rec
}

func retry(maxAttempts, backoffMs int) *orch8.RetryPolicy {
	return &orch8.RetryPolicy{MaxAttempts: orch8.Ptr(maxAttempts), InitialBackoffMs: orch8.Ptr(backoffMs), Jitter: orch8.Ptr(0.0)}
}
