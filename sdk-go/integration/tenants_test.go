package integration_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/internal/refserver"
)

// tenantRecorder is a RoundTripper that remembers the X-Tenant-Id of every request.
type tenantRecorder struct {
	mu      sync.Mutex
	tenants []string
}

func (r *tenantRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.tenants = append(r.tenants, req.Method+" "+req.URL.Path+" "+req.Header.Get("X-Tenant-Id"))
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func tenantClient(t *testing.T, s *refServer, key, tenant string, rt http.RoundTripper) *orch8.Client {
	t.Helper()
	cfg := orch8.Config{BaseURL: s.URL, APIKey: key, Tenant: tenant}
	if rt != nil {
		cfg.HTTPClient = &http.Client{Transport: rt}
	}
	c, err := orch8.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func echo(ctx context.Context, task *orch8.Task) (any, error) { return map[string]any{"ok": true}, nil }

// P-SDK-24, P-TEN-3: a worker given a tenant sends it on every request and drains only
// that tenant's task; the same handler's task in `default` stays pending, and the other
// tenant's id is 404 to a default-tenant client.
func TestWorkerTenantIsolation_P_SDK_24(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	rec := &tenantRecorder{}
	acme := tenantClient(t, s, "", "acme", rec)
	plain := tenantClient(t, s, "", "", nil)
	theirs := enqueue(t, plain, orch8.NewTask{HandlerName: "echo"})
	ours := enqueue(t, acme, orch8.NewTask{HandlerName: "echo"})

	startWorker(t, acme, orch8.WorkerOptions{PollWait: 500 * time.Millisecond}, map[string]orch8.Handler{"echo": echo})
	waitStatus(t, acme, ours, orch8.StatusCompleted, 10*time.Second)
	polls := func() int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		n := 0
		for _, r := range rec.tenants {
			n += strings.Count(r, "/workers/tasks/poll")
		}
		return n
	}
	after := polls()
	// Two more polls begun: the first of them answered without the default-tenant task.
	waitFor(t, 10*time.Second, "two more polls", func() bool { return polls() >= after+2 })
	if got := getTask(t, plain, theirs); got.Status != orch8.StatusPending || got.Attempt != 0 {
		t.Fatalf("default-tenant task is %s (attempt %d), want pending: the acme worker claimed it", got.Status, got.Attempt)
	}
	if _, err := plain.GetTask(context.Background(), ours); !errors.Is(err, orch8.ErrNotFound) {
		t.Errorf("acme's task read from default: %v, want ErrNotFound (P-TEN-3)", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, r := range rec.tenants {
		if !strings.HasSuffix(r, " acme") {
			t.Errorf("request without X-Tenant-Id acme: %s", r)
		}
	}
}

// keyEntry is one [[key]] table of a keys file (P-AUTH-4): the secret's SHA-256, never the secret.
func keyEntry(id, secret, role, tenant, queues string) string {
	sum := sha256.Sum256([]byte(secret))
	entry := fmt.Sprintf("[[key]]\nid = %q\nsha256 = %q\nrole = %q\ntenant = %q\n", id, hex.EncodeToString(sum[:]), role, tenant)
	if queues != "" {
		entry += "queues = " + queues + "\n"
	}
	return entry + "\n"
}

// writeKeysFile replaces the keys file at once, so the server never reads half of it.
func writeKeysFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// writeKeys writes an admin key and a worker key scoped to queues.
func writeKeys(t *testing.T, path string, queues string) {
	t.Helper()
	writeKeysFile(t, path, keyEntry("admin", "admin-secret-0123456789", "admin", "default", "")+
		keyEntry("w-scoped", "worker-secret-0123456789", "worker", "default", queues))
}

// P-SDK-24, P-AUTH-3: a worker key scoped to another queue is refused (403) on
// registration; the worker keeps running and warns, and once the keys file allows the
// queue (SIGHUP) it registers and completes the task without a restart. ErrForbidden is
// what the client returns for a call the role does not allow.
func TestForbiddenWorkerRecoversAfterSIGHUP_P_SDK_24(t *testing.T) {
	t.Parallel()
	keys := filepath.Join(t.TempDir(), "keys.toml")
	writeKeys(t, keys, `["other"]`)
	s := startServer(t, "--keys-file", keys)
	admin := tenantClient(t, s, "admin-secret-0123456789", "", nil)
	worker := tenantClient(t, s, "worker-secret-0123456789", "", nil)
	if _, err := worker.ListTasks(context.Background(), nil); !errors.Is(err, orch8.ErrForbidden) {
		t.Fatalf("a worker key listing tasks: %v, want ErrForbidden", err)
	}
	id := enqueue(t, admin, orch8.NewTask{HandlerName: "echo"})

	logs := &refserver.LogBuffer{}
	w := startWorker(t, worker, orch8.WorkerOptions{PollWait: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))},
		map[string]orch8.Handler{"echo": echo})
	waitFor(t, 10*time.Second, "two refused registrations", func() bool {
		return strings.Count(logs.String(), "registration refused") >= 2
	})
	if got := getTask(t, admin, id); got.Status != orch8.StatusPending {
		t.Fatalf("task is %s while the key may not serve its queue", got.Status)
	}
	for _, want := range []string{"status=403", "code=forbidden", "w-scoped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the warning lacks %q:\n%s", want, logs.String())
		}
	}

	writeKeys(t, keys, `["other", "default"]`)
	s.Signal(syscall.SIGHUP) // P-AUTH-4: the server re-reads the keys file
	waitStatus(t, admin, id, orch8.StatusCompleted, 40*time.Second)
	// The server marks the task completed before the worker has read the answer.
	waitFor(t, 10*time.Second, "the worker to count its completion", func() bool { return w.Stats().TasksCompleted == 1 })
}
