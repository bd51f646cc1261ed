//go:build unix

package integration_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

// RunWithSignals: SIGTSTP quiets, SIGCONT resumes, SIGTERM shuts down (P-SDK-7, P-SDK-8).
// Signals go to this test process, so this test is not parallel.
func TestRunWithSignals(t *testing.T) {
	s := startServer(t)
	c := newClient(t, s, nil)
	w := orch8.NewWorker(c, orch8.WorkerOptions{WorkerID: "go-signals"})
	w.Handle("echo", func(ctx context.Context, task *orch8.Task) (any, error) { return "ok", nil })
	done := make(chan error, 1)
	go func() { done <- w.RunWithSignals(context.Background()) }()
	state := func(want string) func() bool {
		return func() bool {
			rec, err := c.GetWorker(context.Background(), w.ID())
			return err == nil && string(rec.State) == want
		}
	}
	waitFor(t, 5*time.Second, "registration", state("running"))
	self := syscall.Getpid()
	if err := syscall.Kill(self, syscall.SIGTSTP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "quiet after SIGTSTP", state("quiet"))
	if err := syscall.Kill(self, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "running after SIGCONT", state("running"))
	id := enqueue(t, c, orch8.NewTask{HandlerName: "echo"})
	waitStatus(t, c, id, orch8.StatusCompleted, 5*time.Second)
	if err := syscall.Kill(self, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunWithSignals: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunWithSignals did not return after SIGTERM")
	}
}
