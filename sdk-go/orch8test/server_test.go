package orch8test_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/orch8test"
)

// The repo's server, given as a user would: ORCH8_SERVER (unless already set).
func TestMain(m *testing.M) {
	if _, set := os.LookupEnv("ORCH8_SERVER"); !set {
		_, file, _, _ := runtime.Caller(0)
		os.Setenv("ORCH8_SERVER", filepath.Join(filepath.Dir(file), "..", "..", ".venv", "bin", "orch8-server"))
	}
	os.Exit(m.Run())
}

func TestP_CLOCK_2_RetryBackoffOfTenMinutesIsSkipped(t *testing.T) {
	srv := orch8test.StartServer(t)
	ctx := context.Background()
	attempts := make(chan int, 3)
	srv.StartWorker(srv.Worker(map[string]orch8.Handler{
		"flaky_charge": func(_ context.Context, task *orch8.Task) (any, error) {
			attempts <- task.Attempt
			if task.Attempt == 1 {
				return nil, errors.New("gateway timeout")
			}
			return map[string]any{"charged": true}, nil
		},
	}, orch8.WorkerOptions{}))
	tenMinutes := int((10 * time.Minute).Milliseconds())
	task, err := srv.Client.Enqueue(ctx, orch8.NewTask{HandlerName: "flaky_charge", Retry: &orch8.RetryPolicy{
		MaxAttempts: orch8.Ptr(3), InitialBackoffMs: &tenMinutes, MaxBackoffMs: &tenMinutes, Jitter: orch8.Ptr(0.0)}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Advance(10*time.Minute - time.Millisecond) // waits for attempt 1 to fail first (P-CLOCK-3)
	if got, _ := srv.Client.GetTask(ctx, task.ID); got.Status != orch8.StatusScheduled {
		t.Fatalf("one ms before the backoff ends the task is %s, want scheduled", got.Status)
	}
	srv.Advance(time.Millisecond)
	done, err := srv.Client.WaitTask(ctx, task.ID, 10*time.Second)
	if err != nil || done.Status != orch8.StatusCompleted || done.Attempt != 2 {
		t.Fatalf("task %+v, %v", done, err)
	}
	if len(attempts) != 2 || <-attempts != 1 || <-attempts != 2 {
		t.Fatalf("%d attempts ran, want attempts 1 and 2", len(attempts))
	}
}

func TestP_CLOCK_2_WorkflowWithOneHourSleepTakesUnderTwoSeconds(t *testing.T) {
	srv := orch8test.StartServer(t)
	ctx := context.Background()
	if _, err := srv.Client.DefineSequence(ctx, orch8.NewSequence{Name: "nap", Steps: []orch8.Step{
		{ID: "fetch", Handler: orch8.Ptr("nap_fetch")},
		{ID: "nap", Handler: orch8.Ptr("sleep"), Params: &orch8.StepParams{"duration_ms": time.Hour.Milliseconds()}},
		{ID: "send", Handler: orch8.Ptr("nap_send"), Params: &orch8.StepParams{"rows": map[string]any{"$from": "steps.fetch.output.rows"}}},
	}}); err != nil {
		t.Fatal(err)
	}
	w := srv.Worker(map[string]orch8.Handler{
		"nap_fetch": func(context.Context, *orch8.Task) (any, error) { return map[string]any{"rows": 3}, nil },
		"nap_send": func(_ context.Context, task *orch8.Task) (any, error) {
			return map[string]any{"sent": task.Params["rows"]}, nil
		},
	}, orch8.WorkerOptions{})
	srv.WaitIdle(0) // the server's first requests are paid before the clock starts
	started := time.Now()
	inst, err := srv.Client.StartInstance(ctx, orch8.NewInstance{Sequence: "nap"})
	if err != nil {
		t.Fatal(err)
	}
	before := srv.Clock().Now
	done := srv.RunUntilFinal(w, inst.ID)
	took := time.Since(started)
	if done.Status != orch8.InstanceCompleted || done.Output.(map[string]any)["sent"] != 3.0 {
		t.Fatalf("instance %+v", done)
	}
	if moved := srv.Clock().Now.Sub(before); moved != time.Hour {
		t.Fatalf("the clock moved by %v, want exactly the hour of the sleep", moved)
	}
	if took > 2*time.Second {
		t.Fatalf("took %v of wall time", took)
	}
	t.Logf("a one-hour sleep workflow took %v", took)
}

func TestP_CLOCK_3_AdvanceWaitsForTheHeldTask(t *testing.T) {
	srv := orch8test.StartServer(t)
	ctx := context.Background()
	before := srv.Clock().Now
	started, release := make(chan struct{}), make(chan struct{})
	srv.StartWorker(srv.Worker(map[string]orch8.Handler{
		"slow_export": func(context.Context, *orch8.Task) (any, error) {
			close(started)
			<-release
			return "exported", nil
		},
	}, orch8.WorkerOptions{}))
	task, err := srv.Client.Enqueue(ctx, orch8.NewTask{HandlerName: "slow_export"})
	if err != nil {
		t.Fatal(err)
	}
	// While the handler holds the task, the clock must not have moved; then it returns.
	seen := make(chan error, 1)
	go func() {
		<-started
		c, err := srv.Client.GetClock(ctx)
		if err == nil && !c.Now.Equal(before) {
			err = errors.New("the clock moved while the worker held the task")
		}
		seen <- err
		close(release)
	}()
	if moved := srv.Advance(2 * time.Hour); moved.AdvancedMs != int((2 * time.Hour).Milliseconds()) {
		t.Fatalf("advance %+v", moved)
	}
	if err := <-seen; err != nil {
		t.Fatal(err)
	}
	done, err := srv.Client.GetTask(ctx, task.ID)
	if err != nil || done.Status != orch8.StatusCompleted || done.Attempt != 1 {
		t.Fatalf("task %+v, %v: a skip past the lease lost it", done, err)
	}
}

func TestRunTaskUntilFinalSkipsTheBackoff(t *testing.T) {
	srv := orch8test.StartServer(t)
	tenMinutes := int((10 * time.Minute).Milliseconds())
	task, err := srv.Client.Enqueue(context.Background(), orch8.NewTask{HandlerName: "flaky_once", Retry: &orch8.RetryPolicy{
		MaxAttempts: orch8.Ptr(2), InitialBackoffMs: &tenMinutes, MaxBackoffMs: &tenMinutes, Jitter: orch8.Ptr(0.0)}})
	if err != nil {
		t.Fatal(err)
	}
	w := srv.Worker(map[string]orch8.Handler{"flaky_once": func(_ context.Context, task *orch8.Task) (any, error) {
		if task.Attempt == 1 {
			return nil, errors.New("not yet")
		}
		return task.Attempt, nil
	}}, orch8.WorkerOptions{})
	done := srv.RunTaskUntilFinal(w, task.ID)
	if done.Status != orch8.StatusCompleted || done.Attempt != 2 || done.Output != 2.0 {
		t.Fatalf("task %+v", done)
	}
}

// The missing-server error, checked in a child test process (StartServer fails its t).
func TestMissingServerIsAClearError(t *testing.T) {
	if os.Getenv("ORCH8TEST_CHILD") == "missing" {
		orch8test.StartServer(t)
		return
	}
	empty := t.TempDir()
	for _, c := range []struct{ server, want string }{
		{"", "ORCH8_SERVER is not set and no orch8-server is on PATH. Install it with `pip install orch8-server`"},
		{filepath.Join(empty, "orch8-server"), "cannot start ORCH8_SERVER="},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingServerIsAClearError$")
		cmd.Env = append(os.Environ(), "ORCH8TEST_CHILD=missing", "PATH="+empty, "ORCH8_SERVER="+c.server)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Fatalf("ORCH8_SERVER=%q: %v\n%s", c.server, err, out)
		}
	}
}

func TestServerCommandMayHaveArguments(t *testing.T) {
	venv := filepath.Dir(os.Getenv("ORCH8_SERVER")) // the repo's .venv/bin, as TestMain set it
	t.Setenv("ORCH8_SERVER", filepath.Join(venv, "python")+" -m orch8_server")
	if mode := orch8test.StartServer(t).Clock().Mode; mode != "test" {
		t.Fatalf("clock mode %q", mode)
	}
}
