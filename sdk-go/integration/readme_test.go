package integration_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/internal/refserver"
)

// TestReadmeProgramsAreTheExamples: each README program is examples/NAME/main.go word for
// word, so the linked file is what the consumer test runs. A NAME_test block is a test
// file, not a program: the consumer test runs it with `go test`.
func TestReadmeProgramsAreTheExamples(t *testing.T) {
	t.Parallel()
	for name, src := range runnableBlocks(t) {
		if _, isTest := testPackage(name); isTest {
			continue
		}
		example, err := os.ReadFile(filepath.Join("..", "examples", name, "main.go"))
		if err != nil {
			t.Fatal(err)
		}
		if string(example) != src {
			t.Errorf("examples/%s/main.go differs from the README's %s block; keep them identical", name, name)
		}
	}
}

// runQueuesExample runs the README's "Several queues" program (P-SDK-23) against the real
// server: its two workers register their queue lists, complete a task from each of the four
// queues (reporting the queue each came from), and exit cleanly on SIGTERM.
func runQueuesExample(t *testing.T, bin string) {
	s := startServer(t)
	c := newClient(t, s, nil)
	logs := &refserver.LogBuffer{}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "ORCH8_URL="+s.URL)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("example output:\n%s", tail(logs.String(), 4000))
		}
	}()

	ids := map[string]string{}
	for _, q := range []string{"urgent", "default", "reports", "exports"} {
		ids[q] = enqueue(t, c, orch8.NewTask{HandlerName: "notify", QueueName: orch8.Ptr(q)})
	}
	for q, id := range ids {
		rec := waitStatus(t, c, id, orch8.StatusCompleted, 30*time.Second)
		if out, _ := rec.Output.(map[string]any); out["queue"] != q {
			t.Errorf("task on %s answered %v", q, rec.Output)
		}
	}
	workers, err := c.ListWorkers(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var lists []string
	for _, w := range workers.Workers {
		lists = append(lists, fmt.Sprint(w.Queues))
	}
	sort.Strings(lists)
	if fmt.Sprint(lists) != "[[reports exports] [urgent default]]" {
		t.Errorf("registered queue lists %v", lists)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("example exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("example did not exit within 30 s of SIGTERM")
	}
}

// runTenantsExample runs the README's "Tenants and API keys" program (P-SDK-24) against
// the real server with a keys file: its worker key of tenant acme learns its role, is
// refused the worker list (ErrForbidden), completes acme's task and exits cleanly on SIGTERM.
func runTenantsExample(t *testing.T, bin string) {
	keys := filepath.Join(t.TempDir(), "keys.toml")
	writeKeysFile(t, keys, keyEntry("admin", "admin-secret-0123456789", "admin", "default", "")+
		keyEntry("w-acme", "worker-secret-0123456789", "worker", "acme", ""))
	s := startServer(t, "--keys-file", keys)
	admin := tenantClient(t, s, "admin-secret-0123456789", "acme", nil)
	logs := &refserver.LogBuffer{}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "ORCH8_URL="+s.URL, "ORCH8_API_KEY=worker-secret-0123456789")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("example output:\n%s", tail(logs.String(), 4000))
		}
	}()

	id := enqueue(t, admin, orch8.NewTask{HandlerName: "resize"})
	rec := waitStatus(t, admin, id, orch8.StatusCompleted, 30*time.Second)
	if out, _ := rec.Output.(map[string]any); out["tenant"] != "acme" {
		t.Errorf("output %v, want tenant acme", rec.Output)
	}
	for _, want := range []string{"role worker in tenant acme", "may not list workers (403 forbidden"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the example did not print %q", want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("example exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("example did not exit within 30 s of SIGTERM")
	}
}
