package orch8

import (
	"context"
	"net/http"
	"time"

	"github.com/orch8/orch8-workers/sdk-go/api"
)

// The worker loop: poll, heartbeat, complete, fail, release (tag "worker-tasks").

// longPollTimeout is wait_ms + 10 s (P-SDK-1).
func longPollTimeout(waitMs *int) time.Duration {
	w := DefaultWaitMs
	if waitMs != nil {
		w = *waitMs
	}
	return time.Duration(w)*time.Millisecond + LongPollSlack
}

// PollTask claims at most one task, long-polling up to wait_ms; it returns (nil, nil) on
// 204 No Content (P-POLL-1). Polls are never retried by the client (P-SDK-2).
func (c *Client) PollTask(ctx context.Context, opts PollOptions) (*ClaimedTask, error) {
	return invoke(ctx, c, call{op: "pollTask", timeout: longPollTimeout(opts.WaitMs)},
		func(ctx context.Context) (*http.Response, error) { return c.raw.PollTask(ctx, opts) },
		func(r *http.Response) (*ClaimedTask, error) {
			p, err := api.ParsePollTaskResponse(r)
			if err != nil {
				return nil, err
			}
			if r.StatusCode == http.StatusNoContent {
				return nil, nil
			}
			return first("pollTask", r, p.JSON200)
		})
}

// PollTasks claims up to batch_size tasks (P-POLL-5); the answer may hold none.
func (c *Client) PollTasks(ctx context.Context, opts PollBatchOptions) (*PollBatchResult, error) {
	return invoke(ctx, c, call{op: "pollTasks", timeout: longPollTimeout(opts.WaitMs)},
		func(ctx context.Context) (*http.Response, error) { return c.raw.PollTasks(ctx, opts) },
		func(r *http.Response) (*PollBatchResult, error) {
			p, err := api.ParsePollTasksResponse(r)
			if err != nil {
				return nil, err
			}
			return first("pollTasks", r, p.JSON200)
		})
}

// CompleteTask reports success (P-DONE-1); idempotent per lease (P-IDEM-1), so retried.
func (c *Client) CompleteTask(ctx context.Context, taskID string, body TaskCompletion) (*TaskOutcome, error) {
	return invoke(ctx, c, call{op: "completeTask", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.CompleteTask(ctx, taskID, body) },
		func(r *http.Response) (*TaskOutcome, error) {
			p, err := api.ParseCompleteTaskResponse(r)
			if err != nil {
				return nil, err
			}
			return first("completeTask", r, p.JSON200)
		})
}

// FailTask reports failure (P-RETRY-1..5); idempotent per lease (P-IDEM-1), so retried.
func (c *Client) FailTask(ctx context.Context, taskID string, body TaskFailureReport) (*TaskOutcome, error) {
	return invoke(ctx, c, call{op: "failTask", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.FailTask(ctx, taskID, body) },
		func(r *http.Response) (*TaskOutcome, error) {
			p, err := api.ParseFailTaskResponse(r)
			if err != nil {
				return nil, err
			}
			return first("failTask", r, p.JSON200)
		})
}

// Heartbeat extends one task's lease and may save progress and a checkpoint (P-LEASE-5).
func (c *Client) Heartbeat(ctx context.Context, taskID string, body TaskHeartbeat) (*TaskLeaseStatus, error) {
	return invoke(ctx, c, call{op: "heartbeatTask", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.HeartbeatTask(ctx, taskID, body) },
		func(r *http.Response) (*TaskLeaseStatus, error) {
			p, err := api.ParseHeartbeatTaskResponse(r)
			if err != nil {
				return nil, err
			}
			return first("heartbeatTask", r, p.JSON200)
		})
}

// ReleaseTask gives a claimed task back without spending an attempt (P-LEASE-7).
func (c *Client) ReleaseTask(ctx context.Context, taskID string, body TaskRelease) (*TaskOutcome, error) {
	return invoke(ctx, c, call{op: "releaseTask", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.ReleaseTask(ctx, taskID, body) },
		func(r *http.Response) (*TaskOutcome, error) {
			p, err := api.ParseReleaseTaskResponse(r)
			if err != nil {
				return nil, err
			}
			return first("releaseTask", r, p.JSON200)
		})
}

// CompleteTasks completes up to 100 tasks with one outcome per item (P-BATCH-1). Each item
// is idempotent per lease (P-IDEM-1), so the batch is retried like CompleteTask.
func (c *Client) CompleteTasks(ctx context.Context, body api.TaskCompletionBatch) (*BatchOutcome, error) {
	return invoke(ctx, c, call{op: "completeTasks", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.CompleteTasks(ctx, body) },
		func(r *http.Response) (*BatchOutcome, error) {
			p, err := api.ParseCompleteTasksResponse(r)
			if err != nil {
				return nil, err
			}
			return first("completeTasks", r, p.JSON200)
		})
}

// FailTasks fails up to 100 tasks with one outcome per item (P-BATCH-1); retried like FailTask.
func (c *Client) FailTasks(ctx context.Context, body api.TaskFailureBatch) (*BatchOutcome, error) {
	return invoke(ctx, c, call{op: "failTasks", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.FailTasks(ctx, body) },
		func(r *http.Response) (*BatchOutcome, error) {
			p, err := api.ParseFailTasksResponse(r)
			if err != nil {
				return nil, err
			}
			return first("failTasks", r, p.JSON200)
		})
}
