package orch8

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Task is what a handler receives (P-SDK-10): the claimed task, its lease and a way to
// heartbeat. The handler's ctx is cancelled when the lease is lost, the task is cancelled
// or the grace period of a shutdown ran out; context.Cause(ctx) says which
// (ErrLeaseLost, ErrTaskCancelled, ErrShutdown).
type Task struct {
	ID          string
	HandlerName string
	QueueName   string
	Params      map[string]any
	Context     map[string]any
	Headers     map[string]string
	Priority    int
	Attempt     int
	MaxAttempts int
	// Checkpoint saved by an earlier attempt (P-CKPT-1); nil when there is none.
	Checkpoint map[string]any
	LeaseID    string
	CreatedAt  time.Time
	GoodUntil  *time.Time
	// Claimed is the task exactly as the server handed it over.
	Claimed ClaimedTask

	beat  heartbeatFunc     // the task's heartbeat call: the server's, or orch8test's (KitTask)
	lease time.Duration     // lease_ms asked on per-task heartbeats; zero: server default
	drop  func(cause error) // fires the cancellation signal, sends nothing (P-SDK-5)

	mu             sync.Mutex
	leaseExpiresAt time.Time
}

func newTask(ct ClaimedTask, c *Client, lease time.Duration) *Task {
	t := &Task{
		ID: ct.ID, HandlerName: ct.HandlerName, QueueName: ct.QueueName,
		Params: ct.Params, Context: ct.Context, Headers: ct.Headers,
		Priority: ct.Priority, Attempt: ct.Attempt, MaxAttempts: ct.MaxAttempts,
		Checkpoint: ct.Checkpoint, LeaseID: ct.Lease.ID, CreatedAt: ct.CreatedAt, GoodUntil: ct.GoodUntil,
		Claimed: ct, lease: lease, leaseExpiresAt: ct.Lease.ExpiresAt,
		drop: func(error) {},
	}
	if c != nil {
		t.beat = func(ctx context.Context, body TaskHeartbeat) (*TaskLeaseStatus, error) {
			return c.HeartbeatTask(ctx, ct.ID, body)
		}
	}
	if t.Params == nil {
		t.Params = map[string]any{}
	}
	if t.Context == nil {
		t.Context = map[string]any{}
	}
	return t
}

// LeaseExpiresAt is the lease deadline, kept current by heartbeats (P-SDK-10).
func (t *Task) LeaseExpiresAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.leaseExpiresAt
}

func (t *Task) setLeaseExpiresAt(at time.Time) {
	t.mu.Lock()
	t.leaseExpiresAt = at
	t.mu.Unlock()
}

// Heartbeat extends this task's lease now and saves progress and a checkpoint (either may
// be nil) for later attempts (P-SDK-4, P-LEASE-5, P-CKPT-1). The worker already
// heartbeats every task it holds; call this to save a checkpoint or extend at once.
// A 409 lease_lost or task_cancelled answer cancels the handler's ctx and returns an error
// matching ErrLeaseLost or ErrTaskCancelled, so the handler can stop; the worker then
// sends no result for the task (P-SDK-19).
func (t *Task) Heartbeat(ctx context.Context, progress any, checkpoint map[string]any) error {
	st, err := t.beat(ctx, TaskHeartbeat{LeaseID: Ptr(t.LeaseID), Progress: progress,
		Checkpoint: checkpoint, LeaseMs: optMillis(t.lease)})
	switch {
	case errors.Is(err, ErrLeaseLost):
		t.drop(ErrLeaseLost)
	case errors.Is(err, ErrTaskCancelled):
		t.drop(ErrTaskCancelled)
	case err == nil:
		t.setLeaseExpiresAt(st.LeaseExpiresAt)
	}
	return err
}
