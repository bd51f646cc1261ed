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
	w := newWorker(t, c, orch8.WorkerOptions{WorkerID: "go-signals"})
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

// P-SDK-17: a second SIGTERM during the grace period ends it at once, even when the
// handler ignores its cancellation; the task is failed with "shutdown" (retryable).
func TestSecondSignalEndsGracePeriod(t *testing.T) {
	s := startServer(t)
	c := newClient(t, s, nil)
	w := newWorker(t, c, orch8.WorkerOptions{WorkerID: "go-second-signal", GracePeriod: time.Minute})
	started := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	w.Handle("stubborn", func(ctx context.Context, task *orch8.Task) (any, error) {
		close(started)
		<-release // ignores ctx on purpose
		return "late", nil
	})
	done := make(chan error, 1)
	go func() { done <- w.RunWithSignals(context.Background()) }()
	id := enqueue(t, c, orch8.NewTask{HandlerName: "stubborn", Retry: retry(3, 60000)})
	<-started
	self := syscall.Getpid()
	if err := syscall.Kill(self, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the terminating state", func() bool {
		rec, err := c.GetWorker(context.Background(), w.ID())
		return err == nil && string(rec.State) == "terminating"
	})
	begin := time.Now()
	if err := syscall.Kill(self, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunWithSignals: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunWithSignals did not return after the second SIGTERM")
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Fatalf("returned %v after the second signal", d)
	}
	atts, err := c.ListTaskAttempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if a := atts.Attempts[0]; a.Error == nil || a.Error.Code != orch8.CodeShutdown || !a.Error.Retryable {
		t.Fatalf("attempt %+v", a)
	}
	// P-SDK-29: the stored message names the second signal.
	if want := "worker go-second-signal shut down: second signal SIGTERM ended the grace period"; atts.Attempts[0].Error.Message != want {
		t.Fatalf("message %q, want %q", atts.Attempts[0].Error.Message, want)
	}
}
