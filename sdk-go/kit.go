package orch8

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// The bridge of package orch8test (docs/protocol.md 14c): a handler run outside a worker,
// decided by the worker's own rules. Applications use orch8test, not these functions.

// heartbeatFunc sends a task's heartbeat and returns the lease's new state (P-SDK-19).
type heartbeatFunc = func(ctx context.Context, body TaskHeartbeat) (*TaskLeaseStatus, error)

// KitTask builds the *Task a handler receives, for orch8test: heartbeat answers its
// Heartbeat calls in place of the server, and drop is called with the cause when a
// heartbeat learns the task is gone (P-SDK-19), as the worker's is.
func KitTask(ct ClaimedTask, heartbeat func(ctx context.Context, body TaskHeartbeat) (*TaskLeaseStatus, error), drop func(cause error)) *Task {
	t := newTask(ct, nil, 0)
	t.beat = heartbeat
	t.drop = drop
	return t
}

// KitRun calls h as the worker does (a panic is an unhandled_error) and returns the JSON
// the worker would complete with, or else the fail it would send, bounded (P-SDK-6,
// P-SDK-15, P-SDK-20, P-SDK-27), or else the release of a yield (P-SDK-32).
func KitRun(ctx context.Context, h Handler, t *Task) (json.RawMessage, *TaskFailureReport, *TaskRelease) {
	output, err := callHandler(ctx, h, t)
	var y *YieldError
	if errors.As(err, &y) {
		rel := yieldRelease(y, t.LeaseID)
		return nil, nil, &rel
	}
	if err != nil {
		rep := boundFailure(failureFor(err))
		return nil, &rep, nil
	}
	raw, jerr := json.Marshal(output)
	if jerr != nil {
		rep := boundFailure(invalidOutput(jerr))
		return nil, &rep, nil
	}
	return raw, nil, nil
}

// KitRefused is the fail the worker sends when the server refuses a completion on its own
// with pe (P-SDK-15), bounded (P-SDK-27).
func KitRefused(pe *ProblemError) TaskFailureReport {
	return boundFailure(outputRejected(pe))
}

// KitShutdown is the fail the worker sends for a handler still running when its grace
// period ran out (P-SDK-7, P-SDK-29), bounded (P-SDK-27).
func KitShutdown(workerID string, grace time.Duration) TaskFailureReport {
	return boundFailure(shutdownFailure(shutdownMessage(workerID, grace, "")))
}
