package integration_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/internal/refserver"
)

// runWorkflowExample runs the README's "Workflows" program (P-SDK-25, P-WF-2) against the
// real server: it defines resize -> publish, starts an instance, runs its own worker and
// prints the instance's final output, which holds resize's URL passed on by {"$from": ...}.
func runWorkflowExample(t *testing.T, bin string) {
	s := startServer(t)
	var stdout strings.Builder
	logs := &refserver.LogBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "ORCH8_URL="+s.URL)
	cmd.Stdout, cmd.Stderr = &stdout, logs
	if err := cmd.Run(); err != nil {
		t.Fatalf("example: %v\n%s", err, tail(logs.String(), 4000))
	}
	want := `completed {"archived":"https://cdn.example/200/cat.png","why":"private images are not published"}` +
		"\nresize:-:completed delivery:-:completed publish:try:failed archive:catch:completed"
	if got := strings.TrimSpace(stdout.String()); got != want {
		t.Fatalf("example printed %q, want %q", got, want)
	}
	c := newClient(t, s, nil)
	page, err := c.ListInstances(context.Background(), &orch8.ListInstancesParams{Sequence: orch8.Ptr("thumbnail")})
	if err != nil || len(page.Instances) != 1 {
		t.Fatalf("instances %+v, %v", page, err)
	}
	// The catch ran inside the try_catch block: its run names the block and the lane.
	archive := page.Instances[0].Steps[3]
	if archive.Key != "archive" || archive.Group == nil || *archive.Group != "delivery" || archive.Type != orch8.BlockStep {
		t.Fatalf("archive's run %+v", archive)
	}
}

// TestP_SDK_25_FailedInstanceIsFinal: a failed instance is WaitInstance's result, not an
// error (P-WF-6); its failed step's task is final for WaitTask too. Before anything runs,
// a short wait ends in ErrWaitTimeout carrying the running instance.
func TestP_SDK_25_FailedInstanceIsFinal(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	ctx := context.Background()
	if _, err := c.DefineSequence(ctx, orch8.NewSequence{Name: "doomed", Steps: []orch8.Step{
		{ID: "boom", Handler: orch8.Ptr("boom")}, {ID: "never", Handler: orch8.Ptr("never")}}}); err != nil {
		t.Fatal(err)
	}
	inst, err := c.StartInstance(ctx, orch8.NewInstance{Sequence: "doomed"})
	if err != nil {
		t.Fatal(err)
	}

	last, err := c.WaitInstance(ctx, inst.ID, 300*time.Millisecond)
	var te *orch8.WaitTimeoutError
	if !errors.Is(err, orch8.ErrWaitTimeout) || !errors.As(err, &te) || te.Instance == nil ||
		te.Instance.Status != orch8.InstanceRunning || last != te.Instance {
		t.Fatalf("before any worker: %v, %v", last, err)
	}

	startWorker(t, c, orch8.WorkerOptions{}, map[string]orch8.Handler{
		"boom": func(ctx context.Context, task *orch8.Task) (any, error) {
			return nil, orch8.Permanent(errors.New("the image is corrupt"))
		},
	})
	final, err := c.WaitInstance(ctx, inst.ID, time.Minute)
	if err != nil {
		t.Fatalf("a failed instance must be returned, not an error: %v", err)
	}
	if final.Status != orch8.InstanceFailed || final.Error == nil || final.Steps[0].Status != orch8.StepFailed ||
		final.Steps[1].Status != orch8.StepPending || final.Steps[0].TaskID == nil {
		t.Fatalf("final instance %+v", final)
	}
	task, err := c.WaitTask(ctx, *final.Steps[0].TaskID, 0)
	if err != nil || task.Status != orch8.StatusFailed {
		t.Fatalf("WaitTask: %+v, %v", task, err)
	}
}
