package orch8

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/orch8/orch8-workers/sdk-go/internal/refserver"
)

// tenantFront sits before a scripted server: it records every request's X-Tenant-Id and
// refuses the first `refuse` registrations and polls with 403 forbidden.
type tenantFront struct {
	mu      sync.Mutex
	tenants []string // X-Tenant-Id of every request ("" when absent)
	refuse  int
	refused map[string]int // path -> 403s answered
}

func (f *tenantFront) wrap(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.tenants = append(f.tenants, r.Header.Get("X-Tenant-Id"))
		refuse := false
		if r.URL.Path == "/workers" || r.URL.Path == "/workers/tasks/poll/batch" {
			refuse = f.refused[r.URL.Path] < f.refuse
			if refuse {
				f.refused[r.URL.Path]++
			}
		}
		f.mu.Unlock()
		if refuse {
			writeProblem(w, http.StatusForbidden, "forbidden")
			return
		}
		next(w, r)
	}
}

func newTenantWorld(t *testing.T, tenant string, refuse int) (*scripted, *tenantFront, *Client) {
	t.Helper()
	s := &scripted{t: t, handler: map[string]string{}, queueOf: map[string]string{}, leaseOf: map[string]string{}}
	f := &tenantFront{refuse: refuse, refused: map[string]int{}}
	srv := httptest.NewServer(f.wrap(s.serve))
	t.Cleanup(srv.Close)
	c, err := NewClient(Config{BaseURL: srv.URL, Tenant: tenant})
	if err != nil {
		t.Fatal(err)
	}
	return s, f, c
}

// P-SDK-24: the tenant goes out as X-Tenant-Id on every request of the worker.
func TestWorkerSendsTenantOnEveryRequest(t *testing.T) {
	s, f, c := newTenantWorld(t, "acme", 0)
	s.add("task_1", "echo")
	w, _ := NewWorker(c, WorkerOptions{WorkerID: "w1", GracePeriod: -1})
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return map[string]any{}, nil })
	stop := runWorker(t, w)
	waitUntil(t, "the task's completion", func() bool { return w.Stats().TasksCompleted == 1 })
	stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.tenants) < 4 { // register, poll, complete, deregister at least
		t.Fatalf("only %d requests", len(f.tenants))
	}
	for i, got := range f.tenants {
		if got != "acme" {
			t.Errorf("request %d has X-Tenant-Id %q, want acme", i, got)
		}
	}
}

// P-SDK-24: ORCH8_TENANT when the option is empty; no header at all without either.
func TestTenantFromEnvironmentAndAbsent(t *testing.T) {
	t.Setenv("ORCH8_TENANT", "team-b")
	got := ""
	seen := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, seen = r.Header["X-Tenant-Id"]
		got = r.Header.Get("X-Tenant-Id")
		writeJSON(w, 200, map[string]any{"tasks": []any{}, "total": 0})
	}))
	defer srv.Close()
	c, err := NewClient(Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.ListTasks(context.Background(), nil)
	if got != "team-b" || c.Tenant() != "team-b" {
		t.Fatalf("X-Tenant-Id %q from ORCH8_TENANT, want team-b", got)
	}
	t.Setenv("ORCH8_TENANT", "")
	c, _ = NewClient(Config{BaseURL: srv.URL})
	_, _ = c.ListTasks(context.Background(), nil)
	if seen {
		t.Fatalf("X-Tenant-Id %q sent without a tenant", got)
	}
}

// P-SDK-24, P-TEN-2: a malformed tenant is refused by the constructor, before any request.
func TestInvalidTenantRefusedByNewClient(t *testing.T) {
	for _, bad := range []string{"a b", "x/y", strings.Repeat("a", 65), "ténant"} {
		if _, err := NewClient(Config{BaseURL: "http://127.0.0.1:9", Tenant: bad}); err == nil || !strings.Contains(err.Error(), "tenant") {
			t.Errorf("tenant %q: err %v, want an error naming the tenant", bad, err)
		}
	}
	t.Setenv("ORCH8_TENANT", "no spaces allowed")
	if _, err := NewClient(Config{BaseURL: "http://127.0.0.1:9"}); err == nil {
		t.Error("a malformed ORCH8_TENANT was accepted")
	}
	if _, err := NewClient(Config{BaseURL: "http://127.0.0.1:9", Tenant: "A.b_c-1"}); err != nil {
		t.Errorf("valid tenant refused: %v", err)
	}
}

// P-SDK-24: 403 is ErrForbidden (not ErrUnauthorized) and a safe call does not repeat it.
func TestForbiddenIsErrForbiddenAndNeverRetried(t *testing.T) {
	s, c := newStub(t, func(w http.ResponseWriter, r *http.Request, n int) { writeProblem(w, 403, "forbidden") })
	_, err := c.GetTask(context.Background(), "task_1")
	if !errors.Is(err, ErrForbidden) || errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err %v: want ErrForbidden only", err)
	}
	if IsOutage(err) {
		t.Error("403 counted as an outage")
	}
	if n := len(s.requests()); n != 1 {
		t.Fatalf("a 403 was sent %d times, want once", n)
	}
}

// P-SDK-24: a worker refused with 403 on registration and polls keeps running, warns with
// status, code and detail, backs off, and claims once the key is fixed on the server.
func TestWorkerRidesOutForbiddenRegistrationAndPolls(t *testing.T) {
	s, f, c := newTenantWorld(t, "", 2)
	s.add("task_1", "echo")
	logs := &refserver.LogBuffer{}
	w, _ := NewWorker(c, WorkerOptions{WorkerID: "w1", GracePeriod: -1,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	w.Handle("echo", func(ctx context.Context, t *Task) (any, error) { return map[string]any{}, nil })
	stop := runWorker(t, w)
	defer stop()
	waitUntil(t, "the task's completion after the refusals", func() bool { return w.Stats().TasksCompleted == 1 })
	f.mu.Lock()
	refusedPolls, refusedRegs := f.refused["/workers/tasks/poll/batch"], f.refused["/workers"]
	f.mu.Unlock()
	if refusedPolls != 2 || refusedRegs != 2 {
		t.Fatalf("refused %d polls and %d registrations, want 2 each", refusedPolls, refusedRegs)
	}
	out := logs.String()
	for _, want := range []string{"registration refused", "poll refused", "status=403", "code=forbidden", "detail of forbidden", "level=WARN"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	if st := w.Stats(); st.PollErrors != 2 {
		t.Errorf("PollErrors %d, want 2", st.PollErrors)
	}
}
