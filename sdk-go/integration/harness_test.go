package integration_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

// refServer is one real reference server on loopback with its own SQLite file. This is
// the Go SDK's one server launcher (issue 19): it starts `orch8-server --port 0` and reads
// the `orch8-server listening on http://HOST:PORT` line; nothing here looks for a port.
type refServer struct {
	t    *testing.T
	bin  string
	args []string
	URL  string
	log  *os.File
	cmd  *exec.Cmd
}

// serverBinary locates the reference server relative to the repo root (sdk-go's parent).
func serverBinary(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", ".venv", "bin", "orch8-server"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("reference server not found at %s: run `make setup` at the repo root", bin)
	}
	return bin
}

// startServer starts a server with fast test settings; extra flags override them.
func startServer(t *testing.T, extra ...string) *refServer {
	t.Helper()
	dir := t.TempDir()
	args := []string{"--db", filepath.Join(dir, "orch8.db"), "--host", "127.0.0.1",
		"--lease-ms", "2000", "--reaper-interval-ms", "100", "--heartbeat-interval-ms", "300", "--dead-after-ms", "3000"}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	s := &refServer{t: t, bin: serverBinary(t), args: append(args, extra...), log: logf}
	s.start()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			raw, _ := os.ReadFile(logf.Name())
			t.Logf("server log:\n%s", tail(string(raw), 4000))
		}
		logf.Close()
	})
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

var listeningLine = regexp.MustCompile(`^orch8-server listening on (http://\S+)$`)

// start runs the server on --port 0 the first time; a restart asks for the port it bound
// before, so clients keep their URL.
func (s *refServer) start() {
	s.t.Helper()
	port := "0"
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil {
			s.t.Fatal(err)
		}
		port = u.Port()
	}
	s.cmd = exec.Command(s.bin, append(append([]string(nil), s.args...), "--port", port)...)
	s.cmd.Stderr = s.log
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
			fmt.Fprintln(s.log, sc.Text())
		}
		close(found)
	}()
	select {
	case u, ok := <-found:
		if !ok {
			raw, _ := os.ReadFile(s.log.Name())
			s.t.Fatalf("orch8-server exited without its listening line:\n%s", tail(string(raw), 2000))
		}
		s.URL = u
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		s.t.Fatal("orch8-server printed no listening line within 30 s")
	}
}

// stop sends SIGTERM and waits for the process to exit.
func (s *refServer) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

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

// syncBuffer collects a worker's logs; they are printed only when its test fails.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
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
	logs := &syncBuffer{}
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
