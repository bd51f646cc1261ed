package orch8test_test

import (
	"context"
	"errors"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/orch8test"
)

func TestTriggerFromAnotherGoroutine(t *testing.T) {
	tt := orch8test.NewTestTask(orch8test.Options{})
	started := make(chan struct{})
	go func() {
		<-started
		tt.LoseLease()
	}()
	out := tt.Run(context.Background(), func(ctx context.Context, _ *orch8.Task) (any, error) {
		close(started)
		select {
		case <-ctx.Done():
		case <-time.After(signalWait):
			t.Error("LoseLease from another goroutine did not cancel the handler's ctx")
		}
		if !errors.Is(context.Cause(ctx), orch8.ErrLeaseLost) {
			t.Errorf("cause %v, want ErrLeaseLost", context.Cause(ctx))
		}
		return "dropped", nil
	})
	if out.Status != "lease_lost" || out.Output != nil {
		t.Fatalf("outcome %+v, want lease_lost and nothing reported", out)
	}
}

func TestPanicIsAnUnhandledError(t *testing.T) {
	out := orch8test.NewTestTask(orch8test.Options{}).Run(context.Background(),
		func(context.Context, *orch8.Task) (any, error) { panic("boom") })
	if out.Status != "failed" || out.Code != "unhandled_error" || !out.Retryable || out.Details["message"] != "boom" {
		t.Fatalf("outcome %+v", out)
	}
}

func TestATaskRunsOnce(t *testing.T) {
	tt := orch8test.NewTestTask(orch8test.Options{})
	tt.Run(context.Background(), func(context.Context, *orch8.Task) (any, error) { return nil, nil })
	defer func() {
		if recover() == nil {
			t.Fatal("a second Run did not panic")
		}
	}()
	tt.Run(context.Background(), func(context.Context, *orch8.Task) (any, error) { return nil, nil })
}

// P-KIT-5, P-SDK-32: a yield is reported as released with its checkpoint and delay.
func TestYieldIsReleased(t *testing.T) {
	out := orch8test.NewTestTask(orch8test.Options{}).Run(context.Background(), func(ctx context.Context, task *orch8.Task) (any, error) {
		return nil, orch8.Yield(map[string]any{"page": 3}, 50*time.Millisecond)
	})
	if out.Status != "released" || out.Checkpoint["page"] != 3.0 || out.Delay != 50*time.Millisecond || out.Code != "" {
		t.Fatalf("outcome %+v", out)
	}
}
