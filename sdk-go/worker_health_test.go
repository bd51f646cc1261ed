package orch8

import (
	"context"
	"testing"
	"time"
)

// TestRegistrationCountsAsHeartbeat_P_TEL_5: once registration succeeds, GET /health
// reports it as the last heartbeat, before any worker heartbeat was sent.
func TestRegistrationCountsAsHeartbeat_P_TEL_5(t *testing.T) {
	s, c := newScripted(t)
	w := mustWorker(t, c, WorkerOptions{WorkerID: "w1", HeartbeatInterval: time.Hour})
	w.Handle("ok", func(ctx context.Context, t *Task) (any, error) { return nil, nil })
	before := time.Now()
	if err := w.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(s.sent("POST", "/workers/w1/heartbeat")); n != 0 {
		t.Fatalf("%d worker heartbeats sent; the test needs none", n)
	}
	rep := w.healthReport(context.Background())
	if rep.LastHeartbeatAt == nil || rep.LastHeartbeatAt.Before(before.Truncate(time.Microsecond)) {
		t.Fatalf("last_heartbeat_at %v after registration at %v, want the registration time", rep.LastHeartbeatAt, before)
	}
	if rep.Status != "ok" || rep.LastPollAt != nil {
		t.Errorf("report %+v, want ok with no poll yet", rep)
	}
}
