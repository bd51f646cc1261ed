package orch8

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
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
	output json.RawMessage // already checked to be strict JSON (P-SDK-15)
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
func (w *Worker) complete(r *run, output json.RawMessage) {
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
// delivered through a shutdown (P-SDK-7), until Run returns (P-SDK-29).
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

		retry, cause := q.post(batch)
		if len(retry) == 0 {
			outage.reset()
			continue
		}
		// P-SDK-9, P-SDK-16: re-send after the outage backoff (or Retry-After) until each
		// item's lease deadline.
		wait := outageWait(&outage, cause)
		q.w.callFailed(OpComplete, cause, fmt.Sprintf("completion batch of %d", len(retry)),
			fmt.Sprintf("retrying in %d ms", wait.Milliseconds()), "retry_in_ms", wait.Milliseconds())
		retry = q.w.keepUntilDeadline(retry, wait, cause)
		if len(retry) == 0 {
			continue
		}
		if !sleepCtx(q.w.life, wait) {
			q.w.giveUpAfterRun(retry) // Run returned: nothing outlives it (P-SDK-29)
			continue
		}
		q.mu.Lock()
		q.queue = append(retry, q.queue...) // the oldest results go first
		q.mu.Unlock()
	}
}

// refusedAsWhole: a 4xx other than 408/409/429 refuses the batch's content (413, 400,
// 422, ...), so its halves may still go through (P-SDK-15).
func refusedAsWhole(err error) (*ProblemError, bool) {
	var pe *ProblemError
	if !errors.As(err, &pe) || pe.Status < 400 || pe.Status >= 500 {
		return nil, false
	}
	switch pe.Status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return nil, false
	}
	return pe, true
}

// post sends one batch and settles every item it can; it returns the items to re-send
// after an outage and the error that made them so.
func (q *completer) post(batch []*completion) (retry []*completion, cause error) {
	w := q.w
	items := make([]api.TaskCompletionItem, 0, len(batch))
	sent := batch[:0:0]
	for _, c := range batch {
		if dc := c.r.droppedCause(); dc != nil && !errors.Is(dc, ErrShutdown) {
			// The lease was lost or the task cancelled before we reported: send nothing (P-SDK-5).
			close(c.done)
			continue
		}
		t := c.r.task
		items = append(items, api.TaskCompletionItem{TaskID: t.ID, LeaseID: Ptr(t.LeaseID), Output: c.output})
		sent = append(sent, c)
	}
	if len(sent) == 0 {
		return nil, nil
	}
	res, err := w.client.CompleteTasks(w.life, api.TaskCompletionBatch{Items: items})
	if err != nil && w.life.Err() != nil {
		w.giveUpAfterRun(sent)
		return nil, nil
	}
	if err != nil {
		w.fireError(OpComplete, err)
		if IsOutage(err) {
			return sent, err // logged where the wait is known
		}
		if pe, ok := refusedAsWhole(err); ok {
			if len(sent) == 1 {
				w.rejectOutput(sent[0], pe)
				return nil, nil
			}
			// P-SDK-15: split in halves until the refused items go alone.
			w.callFailed(OpComplete, err, fmt.Sprintf("completion batch of %d", len(sent)), "splitting it")
			half := len(sent) / 2
			r1, c1 := q.post(sent[:half])
			r2, c2 := q.post(sent[half:])
			return append(r1, r2...), errors.Join(c1, c2)
		}
		for _, c := range sent {
			w.giveUp(c.r, OpComplete, "completion refused", causeText(err))
			close(c.done)
		}
		return nil, nil
	}
	byID := make(map[string]*BatchItemOutcome, len(res.Items))
	for i := range res.Items {
		byID[res.Items[i].TaskID] = &res.Items[i]
	}
	for _, c := range sent {
		resend, why := w.settleItem(c, byID[c.r.task.ID])
		if resend {
			retry = append(retry, c)
			cause = why
		}
	}
	return retry, cause
}

// settleItem handles one item's answer as a single complete's would be handled (P-SDK-12);
// it reports whether the item must be re-sent, and why.
func (w *Worker) settleItem(c *completion, o *BatchItemOutcome) (bool, error) {
	r, t := c.r, c.r.task
	if o == nil {
		w.giveUp(r, OpComplete, "completion not delivered", "no outcome for the item in the batch answer")
		close(c.done)
		return false, nil
	}
	if o.Status != api.BatchItemStatusError {
		if r.settle(outcomeCompleted) {
			w.release(r) // counted before the hook runs, so the hook sees current stats
			w.line(slog.LevelDebug, "task_completed", "task completed", "", taskAttrs(t)...)
			callHook(w, "OnTaskComplete", w.opts.Hooks.OnTaskComplete, TaskCompleteEvent{Task: t, Duration: r.runTime()})
		}
		close(c.done)
		return false, nil
	}
	p := o.Problem
	if p == nil {
		p = &api.ItemProblem{Code: "unknown"}
	}
	pe := &ProblemError{Status: p.Status, Code: p.Code, Detail: p.Detail}
	switch {
	case errors.Is(pe, ErrLeaseLost), errors.Is(pe, ErrTaskCancelled):
		// The server refused the result: the task is no longer ours (P-LEASE-3, P-CANCEL-2).
		w.fireError(OpComplete, pe)
		w.abandon(r, refusalCause(pe))
		close(c.done)
		return false, nil
	case IsOutage(pe):
		w.fireError(OpComplete, pe)
		return true, pe
	}
	w.fireError(OpComplete, pe)
	w.rejectOutput(c, pe) // refused on its own: P-SDK-15
	return false, nil
}

// rejectOutput reports a completion the server refused on its own with a permanent fail,
// code "output_rejected" (P-SDK-15); the fail carries no output, so it fits.
func (w *Worker) rejectOutput(c *completion, pe *ProblemError) {
	t := c.r.task
	w.line(slog.LevelWarn, "task_rejected", "task failed with output_rejected", causeText(pe), append(taskAttrs(t), "code", CodeOutputRejected)...)
	rep := outputRejected(pe)
	go func() {
		defer close(c.done)
		w.deliverFailure(c.r, rep, time.Time{})
	}()
}

// giveUpAfterRun gives up completions still undelivered when Run returned (P-SDK-29).
func (w *Worker) giveUpAfterRun(items []*completion) {
	for _, c := range items {
		w.giveUp(c.r, OpComplete, "completion not delivered before the worker stopped", "Run returned")
		close(c.done)
	}
}

// keepUntilDeadline gives up the items that may not be re-sent after wait: their lease
// deadline would pass (P-SDK-9) or the heartbeat learned meanwhile that the lease is gone.
// cause is the outage that kept them from being delivered (P-SDK-22).
func (w *Worker) keepUntilDeadline(items []*completion, wait time.Duration, cause error) []*completion {
	keep := items[:0]
	for _, c := range items {
		if time.Now().Add(wait).After(c.r.task.LeaseExpiresAt()) {
			w.giveUp(c.r, OpComplete, "completion still undeliverable at the lease deadline", causeText(cause))
			close(c.done)
			continue
		}
		keep = append(keep, c)
	}
	return keep
}
