package orch8

import (
	"context"
	"maps"

	"github.com/orch8/orch8-workers/sdk-go/api"
)

// headerTraceparent is the W3C trace context header carried in task headers (P-TEL-1).
const headerTraceparent = "traceparent"

// produce runs an enqueue (single or batch) inside the client's producer span and injects
// its trace context into every task's headers that has no traceparent yet (P-TEL-1).
// Without telemetry it only calls send. The generated Enqueue and EnqueueBatch call it.
func produce[B api.NewTask | api.NewTaskBatch, T any](ctx context.Context, c *Client, body B, send func(context.Context, B) (*T, error)) (*T, error) {
	tel := c.cfg.Telemetry
	if tel == nil {
		return send(ctx, body)
	}
	var info SendInfo
	switch b := any(body).(type) {
	case api.NewTask:
		info = SendInfo{Queue: taskQueue(b), Count: 1}
	case api.NewTaskBatch:
		info = SendInfo{Queue: batchQueue(b.Tasks), Batch: true, Count: len(b.Tasks)}
	}
	ctx, span := tel.StartSend(ctx, info)
	switch b := any(&body).(type) {
	case *api.NewTask:
		b.Headers = withTraceContext(b.Headers, span)
	case *api.NewTaskBatch:
		tasks := make([]api.NewTask, len(b.Tasks)) // never write into the caller's slice
		for i, t := range b.Tasks {
			t.Headers = withTraceContext(t.Headers, span)
			tasks[i] = t
		}
		b.Tasks = tasks
	}
	res, err := send(ctx, body)
	var ids []string
	switch r := any(res).(type) {
	case *api.Task:
		if r != nil {
			ids = []string{r.ID}
		}
	case *api.EnqueuedTasks:
		if r != nil {
			for _, t := range r.Tasks {
				ids = append(ids, t.ID)
			}
		}
	}
	span.End(ids, err)
	return res, err
}

// withTraceContext returns a copy of headers carrying the span's trace context, unless
// the caller already set traceparent: the caller's wins (P-TEL-1).
func withTraceContext(headers map[string]string, span SendSpan) map[string]string {
	if _, ok := headers[headerTraceparent]; ok {
		return headers
	}
	out := make(map[string]string, len(headers)+2)
	maps.Copy(out, headers)
	span.Inject(out)
	return out
}

func taskQueue(t api.NewTask) string {
	if t.QueueName == nil || *t.QueueName == "" {
		return DefaultQueue // P-QUEUE-1
	}
	return *t.QueueName
}

// batchQueue is the batch's one queue, or "" when its tasks go to several.
func batchQueue(tasks []api.NewTask) string {
	if len(tasks) == 0 {
		return DefaultQueue
	}
	q := taskQueue(tasks[0])
	for _, t := range tasks[1:] {
		if taskQueue(t) != q {
			return ""
		}
	}
	return q
}
