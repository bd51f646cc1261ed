package orch8

import (
	"context"
	"net/http"

	"github.com/orch8/orch8-workers/sdk-go/api"
)

// Producer and operator operations on tasks (tag "tasks" of openapi.yaml).

// Enqueue creates one task (P-TASK-1). It is retried only with an idempotency_key (P-SDK-2).
func (c *Client) Enqueue(ctx context.Context, task NewTask) (*TaskRecord, error) {
	safe := task.IdempotencyKey != nil && *task.IdempotencyKey != ""
	return invoke(ctx, c, call{op: "enqueueTask", safe: safe},
		func(ctx context.Context) (*http.Response, error) { return c.raw.EnqueueTask(ctx, task) },
		func(r *http.Response) (*TaskRecord, error) {
			p, err := api.ParseEnqueueTaskResponse(r)
			if err != nil {
				return nil, err
			}
			return first("enqueueTask", r, p.JSON201, p.JSON200)
		})
}

// EnqueueBatch creates 1-100 tasks atomically (P-TASK-2); retried only when every task
// carries an idempotency_key (P-SDK-2).
func (c *Client) EnqueueBatch(ctx context.Context, batch NewTaskBatch) (*EnqueuedTasks, error) {
	safe := len(batch.Tasks) > 0
	for _, t := range batch.Tasks {
		if t.IdempotencyKey == nil || *t.IdempotencyKey == "" {
			safe = false
		}
	}
	return invoke(ctx, c, call{op: "enqueueTasks", safe: safe},
		func(ctx context.Context) (*http.Response, error) { return c.raw.EnqueueTasks(ctx, batch) },
		func(r *http.Response) (*EnqueuedTasks, error) {
			p, err := api.ParseEnqueueTasksResponse(r)
			if err != nil {
				return nil, err
			}
			return first("enqueueTasks", r, p.JSON201)
		})
}

// GetTask reads one task.
func (c *Client) GetTask(ctx context.Context, taskID string) (*TaskRecord, error) {
	return invoke(ctx, c, call{op: "getTask", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.GetTask(ctx, taskID) },
		func(r *http.Response) (*TaskRecord, error) {
			p, err := api.ParseGetTaskResponse(r)
			if err != nil {
				return nil, err
			}
			return first("getTask", r, p.JSON200)
		})
}

// ListTasks reads one page of tasks, newest first; params may be nil.
func (c *Client) ListTasks(ctx context.Context, params *ListTasksParams) (*TaskPage, error) {
	return invoke(ctx, c, call{op: "listTasks", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.ListTasks(ctx, params) },
		func(r *http.Response) (*TaskPage, error) {
			p, err := api.ParseListTasksResponse(r)
			if err != nil {
				return nil, err
			}
			return first("listTasks", r, p.JSON200)
		})
}

// CancelTask cancels a task (P-CANCEL-1); never retried by the client (P-SDK-2).
func (c *Client) CancelTask(ctx context.Context, taskID string, body TaskCancellation) (*TaskRecord, error) {
	return invoke(ctx, c, call{op: "cancelTask"},
		func(ctx context.Context) (*http.Response, error) { return c.raw.CancelTask(ctx, taskID, body) },
		func(r *http.Response) (*TaskRecord, error) {
			p, err := api.ParseCancelTaskResponse(r)
			if err != nil {
				return nil, err
			}
			return first("cancelTask", r, p.JSON200)
		})
}

// RetryTask re-runs a failed, cancelled or expired task (P-RETRY-6); never retried by the
// client (P-SDK-2).
func (c *Client) RetryTask(ctx context.Context, taskID string, body TaskRetry) (*TaskRecord, error) {
	return invoke(ctx, c, call{op: "retryTask"},
		func(ctx context.Context) (*http.Response, error) { return c.raw.RetryTask(ctx, taskID, body) },
		func(r *http.Response) (*TaskRecord, error) {
			p, err := api.ParseRetryTaskResponse(r)
			if err != nil {
				return nil, err
			}
			return first("retryTask", r, p.JSON200)
		})
}

// ListTaskAttempts reads a task's attempt history, oldest first.
func (c *Client) ListTaskAttempts(ctx context.Context, taskID string) (*AttemptList, error) {
	return invoke(ctx, c, call{op: "listTaskAttempts", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.ListTaskAttempts(ctx, taskID) },
		func(r *http.Response) (*AttemptList, error) {
			p, err := api.ParseListTaskAttemptsResponse(r)
			if err != nil {
				return nil, err
			}
			return first("listTaskAttempts", r, p.JSON200)
		})
}

// CompleteTaskManually lets an operator complete a pending, scheduled or running task by
// hand (P-MANUAL-1); its worker, if any, sees lease_lost. Not retried (P-SDK-2).
func (c *Client) CompleteTaskManually(ctx context.Context, taskID string, body ManualCompletion) (*TaskRecord, error) {
	return invoke(ctx, c, call{op: "completeTaskManually"},
		func(ctx context.Context) (*http.Response, error) {
			return c.raw.CompleteTaskManually(ctx, taskID, body)
		},
		func(r *http.Response) (*TaskRecord, error) {
			p, err := api.ParseCompleteTaskManuallyResponse(r)
			if err != nil {
				return nil, err
			}
			return first("completeTaskManually", r, p.JSON200)
		})
}

// FailTaskManually lets an operator fail a task permanently by hand (P-MANUAL-1; code
// "manual" unless given). Not retried (P-SDK-2).
func (c *Client) FailTaskManually(ctx context.Context, taskID string, body ManualFailure) (*TaskRecord, error) {
	return invoke(ctx, c, call{op: "failTaskManually"},
		func(ctx context.Context) (*http.Response, error) { return c.raw.FailTaskManually(ctx, taskID, body) },
		func(r *http.Response) (*TaskRecord, error) {
			p, err := api.ParseFailTaskManuallyResponse(r)
			if err != nil {
				return nil, err
			}
			return first("failTaskManually", r, p.JSON200)
		})
}
