package integration_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/internal/refserver"
)

// TestReadmeQueuesExample runs the README's "Several queues" program (P-SDK-23), which
// must be examples/queues/main.go word for word, against the real server: its two workers
// register their queue lists, complete a task from each of the four queues (reporting the
// queue each came from), and exit cleanly on SIGTERM.
func TestReadmeQueuesExample(t *testing.T) {
	t.Parallel()
	src := readmeBlock(t, "../README.md", "queues")
	example, err := os.ReadFile("../examples/queues/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(example) != src {
		t.Fatal("examples/queues/main.go differs from the README's queues block; keep them identical")
	}
	bin := filepath.Join(t.TempDir(), "queues")
	build := exec.Command("go", "build", "-o", bin, "./examples/queues")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/queues: %v\n%s", err, out)
	}

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
