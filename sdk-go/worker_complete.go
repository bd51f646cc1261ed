package orch8

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/orch8/orch8-workers/sdk-go/api"
)

// maxCompleteBatch is the most items one POST /workers/tasks/complete/batch carries (P-SDK-12).
const maxCompleteBatch = 100

// completion is one handler's output waiting to be reported; done closes once it is
// delivered, refused or given up.
type completion struct {
	r      *run
	output any
	done   chan struct{}
}

// completer reports completions group-commit style (P-SDK-12): a result that is ready
// while no batch request is in flight goes out at once, alone; results that become ready
// meanwhile wait for that request and then go together in the next one. No timer, so an
// idle worker adds no latency.
type completer struct {
	w        *Worker
	mu       sync.Mutex
	queue    []*completion
	inFlight bool // a sender goroutine owns the queue
}

// complete reports a handler's output and returns once it is delivered or given up.
func (w *Worker) complete(r *run, output any) {
	c := &completion{r: r, output: output, done: make(chan struct{})}
	q := w.completions
	q.mu.Lock()
	q.queue = append(q.queue, c)
	start := !q.inFlight
	q.inFlight = true
	q.mu.Unlock()
	if start {
		go q.send()
	}
	<-c.done
}

// send posts batches until the queue is empty. It never uses the Run context: results are
// delivered through a shutdown (P-SDK-7).
func (q *completer) send() {
	outage := backoff{base: DefaultOutageBase, cap: DefaultOutageCap}
	for {
		q.mu.Lock()
		if len(q.queue) == 0 {
			q.inFlight = false
			q.mu.Unlock()
			return
		}
		n := min(len(q.queue), maxCompleteBatch)
		batch := append([]*completion(nil), q.queue[:n]...)
		q.queue = q.queue[n:]
		q.mu.Unlock()

		retry := q.post(batch)
		if len(retry) == 0 {
			outage.reset()
			continue
		}
		// P-SDK-9: re-send with the outage backoff until each item's lease deadline.
		wait := outage.next()
		retry = q.w.keepUntilDeadline(retry, wait)
		if len(retry) == 0 {
			continue
		}
		time.Sleep(wait)
		q.mu.Lock()
		q.queue = append(retry, q.queue...) // the oldest results go first
		q.mu.Unlock()
	}
}

// post sends one batch and settles every item it can; it returns the items to re-send.
func (q *completer) post(batch []*completion) (retry []*completion) {
	w := q.w
	items := make([]api.TaskCompletionItem, 0, len(batch))
	sent := batch[:0:0]
	for _, c := range batch {
		if cause := c.r.droppedCause(); cause != nil && !errors.Is(cause, ErrShutdown) {
			// The lease was lost or the task cancelled before we reported: send nothing (P-SDK-5).
			w.log.Info("orch8: result discarded", "task_id", c.r.task.ID, "cause", cause.Error())
			close(c.done)
			continue
		}
		t := c.r.task
		items = append(items, api.TaskCompletionItem{TaskId: t.ID, LeaseId: Ptr(t.LeaseID), Output: c.output})
		sent = append(sent, c)
	}
	if len(sent) == 0 {
		return nil
	}
	res, err := w.client.CompleteTasks(context.Background(), api.TaskCompletionBatch{Items: items})
	if err != nil {
		if isOutage(err) {
			for _, c := range sent {
				w.log.Warn("orch8: result not delivered, retrying", "result", "complete", "task_id", c.r.task.ID, "err", err)
			}
			return sent
		}
		for _, c := range sent {
			w.log.Error("orch8: result not delivered, giving up", "result", "complete", "task_id", c.r.task.ID, "err", err)
			close(c.done)
		}
		return nil
	}
	byID := make(map[string]*BatchItemOutcome, len(res.Items))
	for i := range res.Items {
		byID[res.Items[i].TaskId] = &res.Items[i]
	}
	for _, c := range sent {
		if w.settle(c, byID[c.r.task.ID]) {
			retry = append(retry, c)
		} else {
			close(c.done)
		}
	}
	return retry
}

// settle handles one item's answer as a single complete's would be handled (P-SDK-12);
// it reports whether the item must be re-sent.
func (w *Worker) settle(c *completion, o *BatchItemOutcome) (resend bool) {
	r, t := c.r, c.r.task
	log := w.log.With("task_id", t.ID)
	switch {
	case o == nil:
		log.Error("orch8: result not delivered, giving up", "result", "complete", "err", "no outcome for the item in the batch answer")
		return false
	case o.Status != api.BatchItemStatusError:
		w.stats.completed.Add(1)
		if h := w.opts.Hooks.OnTaskComplete; h != nil {
			h(t, c.output)
		}
		return false
	}
	p := o.Problem
	if p == nil {
		p = &api.ItemProblem{Code: "unknown"}
	}
	pe := &ProblemError{Status: p.Status, Code: p.Code, Detail: p.Detail}
	switch {
	case errors.Is(pe, ErrLeaseLost), errors.Is(pe, ErrTaskCancelled):
		// The server refused the result: the task is no longer ours (P-LEASE-3, P-CANCEL-2).
		cause := ErrLeaseLost
		if errors.Is(pe, ErrTaskCancelled) {
			cause = ErrTaskCancelled
		}
		log.Info("orch8: result refused", "result", "complete", "cause", cause.Error())
		w.dropRun(r, cause)
		return false
	case isOutage(pe):
		log.Warn("orch8: result not delivered, retrying", "result", "complete", "err", pe)
		return true
	}
	log.Error("orch8: result not delivered, giving up", "result", "complete", "err", pe)
	return false
}

// keepUntilDeadline settles the items that may not be re-sent after wait: their lease
// deadline would pass (P-SDK-9) or the heartbeat learned meanwhile that the lease is gone.
func (w *Worker) keepUntilDeadline(items []*completion, wait time.Duration) []*completion {
	keep := items[:0]
	for _, c := range items {
		if time.Now().Add(wait).After(c.r.task.LeaseExpiresAt()) {
			w.log.Error("orch8: result not delivered, giving up", "result", "complete", "task_id", c.r.task.ID,
				"err", "lease deadline passed during the outage")
			close(c.done)
			continue
		}
		keep = append(keep, c)
	}
	return keep
}
