//go:build unix

package orch8

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// P-SDK-29: the first SIGTERM is logged at info and the second signal (SIGINT here) at
// warning, each by name; the task left running is failed with
// "worker <id> shut down: second signal SIGINT ended the grace period".
func TestP_SDK_29_SecondSignalIsNamedInLogsAndMessage(t *testing.T) {
	s, c := newScripted(t)
	var logs logBuffer
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", GracePeriod: time.Minute, PollWait: 50 * time.Millisecond, Logger: logs.logger()})
	started := make(chan struct{})
	w.Handle("slow", func(ctx context.Context, t *Task) (any, error) { close(started); <-ctx.Done(); return nil, ctx.Err() })
	s.add("task_1", "slow")
	sigs, done := make(chan os.Signal, 2), make(chan struct{})
	defer close(done)
	go w.watchSignals(sigs, done) // RunWithSignals' loop, fed without signalling the test process
	stop := runWorker(t, w)
	<-started
	sigs <- syscall.SIGTERM
	waitUntil(t, "the shutdown", func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.stopping })
	sigs <- syscall.SIGINT
	stop()
	want := "worker w1 shut down: second signal SIGINT ended the grace period"
	if b := s.failBodies()["task_1"]; b["error"] != want || b["code"] != CodeShutdown {
		t.Fatalf("fail body %v, want error %q", b, want)
	}
	if logs.line("level=INFO", "signal=SIGTERM") == "" || logs.line("level=WARN", "signal=SIGINT") == "" {
		t.Fatalf("signals not logged by name at info, then warning:\n%s", logs.String())
	}
}
