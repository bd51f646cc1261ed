package integration_test

import (
	"context"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

// P-CTRL-1, P-CTRL-2, P-CTRL-3, P-OBS-4, P-OBS-5: the client's operator calls decode the
// real server's answers: a paused queue's task waits (blocked "paused") until resume; caps
// are listed in the controls; the history has the queue's enqueues.
func TestQueueControlsThroughClient_P_CTRL_1(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	ctx := context.Background()
	qc, err := c.PauseQueue(ctx, "emails")
	if err != nil || !qc.Paused || qc.PausedAt == nil || qc.QueueName != "emails" {
		t.Fatalf("PauseQueue: %+v, %v", qc, err)
	}
	id := enqueue(t, c, orch8.NewTask{HandlerName: "echo", QueueName: orch8.Ptr("emails")})
	startWorker(t, c, orch8.WorkerOptions{QueueName: "emails", PollWait: time.Second},
		map[string]orch8.Handler{"echo": func(ctx context.Context, task *orch8.Task) (any, error) { return "ok", nil }})
	waitFor(t, 10*time.Second, `the "emails" row blocked by the pause`, func() bool {
		st, err := c.QueueStats(ctx, &orch8.QueueStatsParams{QueueName: orch8.Ptr("emails")})
		if err != nil {
			t.Fatal(err)
		}
		return len(st.Queues) == 1 && st.Queues[0].Paused && st.Queues[0].Blocked != nil &&
			*st.Queues[0].Blocked == orch8.BlockedPaused && st.Queues[0].ActivePollers > 0
	})
	if rec := getTask(t, c, id); rec.Status != orch8.StatusPending {
		t.Fatalf("task on a paused queue is %s", rec.Status)
	}
	if qc, err = c.ResumeQueue(ctx, "emails"); err != nil || qc.Paused {
		t.Fatalf("ResumeQueue: %+v, %v", qc, err)
	}
	waitStatus(t, c, id, orch8.StatusCompleted, 10*time.Second)

	if qc, err = c.SetQueueLimit(ctx, "emails", orch8.RunningLimit{MaxRunning: orch8.Ptr(3)}); err != nil || qc.MaxRunning == nil || *qc.MaxRunning != 3 {
		t.Fatalf("SetQueueLimit: %+v, %v", qc, err)
	}
	hc, err := c.SetHandlerLimit(ctx, "echo", orch8.RunningLimit{MaxRunning: orch8.Ptr(2)})
	if err != nil || hc.HandlerName != "echo" || hc.MaxRunning == nil || *hc.MaxRunning != 2 {
		t.Fatalf("SetHandlerLimit: %+v, %v", hc, err)
	}
	st, err := c.QueueStats(ctx, nil)
	if err != nil || len(st.QueueControls) != 1 || *st.QueueControls[0].MaxRunning != 3 ||
		len(st.HandlerControls) != 1 || st.HandlerControls[0].HandlerName != "echo" {
		t.Fatalf("QueueStats controls: %+v, %v", st, err)
	}
	if qc, err = c.SetQueueLimit(ctx, "emails", orch8.RunningLimit{}); err != nil || qc.MaxRunning != nil {
		t.Fatalf("SetQueueLimit(nil): %+v, %v", qc, err)
	}

	waitFor(t, 15*time.Second, "the enqueue in the queue history", func() bool {
		h, err := c.QueueHistory(ctx, "emails", &orch8.QueueHistoryParams{Minutes: orch8.Ptr(5)})
		if err != nil {
			t.Fatal(err)
		}
		enqueued := 0
		for _, p := range h.Points {
			enqueued += p.Enqueued
		}
		return h.QueueName == "emails" && h.BucketMs == 60000 && len(h.Points) == 5 && enqueued == 1
	})
}

// P-LABEL-1, P-LABEL-3: a task's required_labels, given through Enqueue, route it to a
// worker whose Labels match; a task no worker matches stays pending, counted unroutable.
func TestRequiredLabelsRouteToWorkerLabels_P_LABEL_1(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	startWorker(t, c, orch8.WorkerOptions{Labels: map[string]string{"gpu": "a100"}},
		map[string]orch8.Handler{"render": func(ctx context.Context, task *orch8.Task) (any, error) { return "ok", nil }})
	match := enqueue(t, c, orch8.NewTask{HandlerName: "render", RequiredLabels: &orch8.RequiredLabels{"gpu": "a100"}})
	other := enqueue(t, c, orch8.NewTask{HandlerName: "render", RequiredLabels: &orch8.RequiredLabels{"gpu": "h100"}})
	if rec := waitStatus(t, c, match, orch8.StatusCompleted, 10*time.Second); rec.RequiredLabels["gpu"] != "a100" {
		t.Fatalf("required_labels read back %v", rec.RequiredLabels)
	}
	waitFor(t, 10*time.Second, "the h100 task counted unroutable", func() bool {
		st, err := c.QueueStats(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(st.Queues) == 1 && st.Queues[0].Unroutable == 1
	})
	if rec := getTask(t, c, other); rec.Status != orch8.StatusPending {
		t.Fatalf("unroutable task is %s", rec.Status)
	}
}
