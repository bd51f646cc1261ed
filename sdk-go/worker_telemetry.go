package orch8

import (
	"context"
	"time"
)

// The worker's calls into Telemetry (docs/protocol.md section 15). Every caller checks
// w.tel != nil first, so a worker without telemetry makes none of them.

// received counts an answered poll and, when it claimed tasks, records its receive span
// (P-TEL-3, P-TEL-4). It returns the context the tasks' process spans link to.
func (w *Worker) received(base context.Context, began time.Time, tasks []ClaimedTask) context.Context {
	if w.tel == nil {
		return base
	}
	if len(tasks) == 0 {
		w.tel.Polled(base, PollEmpty)
		return base
	}
	w.tel.Polled(base, PollClaimed)
	return w.tel.Receive(base, ReceiveInfo{Queue: claimedQueue(tasks), Count: len(tasks), WorkerID: w.opts.WorkerID, Began: began})
}

// startProcess begins a claimed task's process span, a child of the traceparent in its
// headers, linked to the poll's span (P-TEL-3); the schedule-to-start wait is claim time
// minus ready_at (P-TEL-4).
func (w *Worker) startProcess(base, receive context.Context, ct ClaimedTask, claimedAt time.Time) (context.Context, ProcessSpan) {
	return w.tel.StartProcess(base, receive, ProcessInfo{
		TaskID: ct.ID, Queue: ct.QueueName, Handler: ct.HandlerName, WorkerID: w.opts.WorkerID,
		Attempt: ct.Attempt, Headers: ct.Headers, ReadyAt: ct.ReadyAt, ClaimedAt: claimedAt,
	})
}

// endProcess ends a task's process span with its outcome, once it left the held set
// (P-TEL-3), and reports the freed slot (P-TEL-4).
func (w *Worker) endProcess(r *run, o outcome, free int) {
	res := ProcessResult{Outcome: outcomeName(o), Duration: r.runTime()}
	if o == outcomeFailed {
		r.mu.Lock()
		res.ErrorType = r.code
		r.mu.Unlock()
	}
	if r.span != nil {
		r.span.End(res)
	}
	w.tel.Slots(context.Background(), -1, free)
}

// outcomeName is a settled outcome as orch8.outcome names it (P-TEL-3).
func outcomeName(o outcome) string {
	switch o {
	case outcomeCompleted:
		return OutcomeCompleted
	case outcomeFailed:
		return OutcomeFailed
	case outcomeCancelled:
		return OutcomeCancelled
	case outcomeReleased:
		return OutcomeReleased
	}
	return OutcomeLeaseLost
}

// claimedQueue is the one queue the claimed tasks came from, or "" when they came from
// several: the receive span is then named "receive" alone, without
// messaging.destination.name (P-TEL-3), as the other SDKs name it.
func claimedQueue(tasks []ClaimedTask) string {
	q := tasks[0].QueueName
	for _, t := range tasks[1:] {
		if t.QueueName != q {
			return ""
		}
	}
	return q
}
