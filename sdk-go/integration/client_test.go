package integration_test

import (
	"context"
	"errors"
	"testing"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

// The seed's minimal loop, with the Go client: poll, complete, and a 204 when empty.
func TestSeedLoopWithClient(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	ctx := context.Background()
	id := enqueue(t, c, orch8.NewTask{HandlerName: "process_image", Params: orch8.JSONObject{"width": 800}})
	task, err := c.PollTask(ctx, orch8.PollOptions{HandlerNames: []string{"process_image"}, WorkerID: orch8.Ptr("img-worker-1"), WaitMs: orch8.Ptr(0)})
	if err != nil || task == nil || task.ID != id || task.Params["width"] != float64(800) || task.Attempt != 1 {
		t.Fatalf("poll: %v %+v", err, task)
	}
	out, err := c.CompleteTask(ctx, task.ID, orch8.TaskCompletion{Output: map[string]any{"url": "https://cdn.example.com/p.png"}})
	if err != nil || out.Status != orch8.StatusCompleted {
		t.Fatalf("complete: %v %+v", err, out)
	}
	// P-IDEM-1: the same complete again answers the same outcome.
	if again, err := c.CompleteTask(ctx, task.ID, orch8.TaskCompletion{Output: map[string]any{"url": "https://cdn.example.com/p.png"}}); err != nil || again.Status != orch8.StatusCompleted {
		t.Fatalf("repeat complete: %v %+v", err, again)
	}
	empty, err := c.PollTask(ctx, orch8.PollOptions{WaitMs: orch8.Ptr(0)})
	if err != nil || empty != nil {
		t.Fatalf("empty poll: want (nil, nil), got (%+v, %v)", empty, err)
	}
}

func TestClientErrorsFromRealServer(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	ctx := context.Background()

	if _, err := c.GetTask(ctx, "task_nope"); !errors.Is(err, orch8.ErrNotFound) {
		t.Errorf("unknown task: %v", err)
	}
	_, err := c.Enqueue(ctx, orch8.NewTask{HandlerName: "x", Priority: orch8.Ptr(5_000_000)})
	var pe *orch8.ProblemError
	if !errors.Is(err, orch8.ErrValidation) || !errors.As(err, &pe) || pe.Status != 422 || len(pe.Errors) == 0 || pe.Errors[0].Pointer != "/priority" {
		t.Errorf("invalid priority: %v", err)
	}
	id := enqueue(t, c, orch8.NewTask{HandlerName: "x"})
	task, err := c.PollTask(ctx, orch8.PollOptions{WaitMs: orch8.Ptr(0)})
	if err != nil || task == nil {
		t.Fatalf("poll: %v", err)
	}
	if _, err := c.CancelTask(ctx, id, orch8.TaskCancellation{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompleteTask(ctx, id, orch8.TaskCompletion{LeaseID: orch8.Ptr(task.Lease.ID)}); !errors.Is(err, orch8.ErrTaskCancelled) {
		t.Errorf("complete after cancel: %v", err)
	}
	done := enqueue(t, c, orch8.NewTask{HandlerName: "y"})
	claimed, err := c.PollTask(ctx, orch8.PollOptions{HandlerNames: []string{"y"}, WaitMs: orch8.Ptr(0)})
	if err != nil || claimed == nil {
		t.Fatalf("poll y: %v", err)
	}
	if _, err := c.CompleteTask(ctx, done, orch8.TaskCompletion{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Heartbeat(ctx, done, orch8.TaskHeartbeat{LeaseID: orch8.Ptr("lease_other")}); !errors.Is(err, orch8.ErrLeaseLost) {
		t.Errorf("heartbeat with a stale lease: %v", err)
	}
	if _, err := c.CancelTask(ctx, done, orch8.TaskCancellation{}); !errors.Is(err, orch8.ErrConflict) {
		t.Errorf("cancel a completed task: %v", err)
	}
	a, err := c.Enqueue(ctx, orch8.NewTask{HandlerName: "z", IdempotencyKey: orch8.Ptr("order-42")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Enqueue(ctx, orch8.NewTask{HandlerName: "z", IdempotencyKey: orch8.Ptr("order-42")})
	if err != nil || b.ID != a.ID {
		t.Errorf("idempotent enqueue: %v %s != %s", err, b.ID, a.ID)
	}
	info, err := c.ServerInfo(ctx)
	if err != nil || info.SpecVersion != orch8.SpecVersion {
		t.Errorf("server info %v %+v", err, info)
	} else if info.SpecSHA256 != orch8.SpecSHA256 {
		t.Logf("server built from spec %s, SDK from %s", info.SpecSHA256, orch8.SpecSHA256)
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--api-key", "s3cret")
	ctx := context.Background()
	if _, err := newClient(t, s, nil).ListTasks(ctx, nil); !errors.Is(err, orch8.ErrUnauthorized) {
		t.Fatalf("no key: %v", err)
	}
	c, err := orch8.NewClient(orch8.Config{BaseURL: s.URL, APIKey: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTasks(ctx, &orch8.ListTasksParams{Limit: orch8.Ptr(5)}); err != nil {
		t.Fatalf("with key: %v", err)
	}
}
