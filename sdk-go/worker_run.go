package orch8

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

type phase int

const (
	phaseHandling   phase = iota // the handler runs
	phaseDelivering              // the handler returned; its result is being sent
	phaseDone
)

// run is one claimed task inside the worker: its handler's context and where it stands.
type run struct {
	task    *Task
	handler Handler
	ctx     context.Context
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when the result is delivered or given up

	mu      sync.Mutex
	phase   phase
	dropped error // why nothing may be sent for this task any more (P-SDK-5)
}

// drop fires the handler's cancellation signal; from now on nothing is sent for the task
// (P-SDK-5). It reports whether this call dropped it.
func (r *run) drop(cause error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dropped != nil || r.phase == phaseDone {
		return false
	}
	r.dropped = cause
	r.cancel(cause)
	return true
}

func (r *run) droppedCause() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// live: the task's outcome is still to come (shutdown waits for these).
func (r *run) live() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.phase == phaseDelivering || (r.phase == phaseHandling && r.dropped == nil)
}

// claimForShutdown is called when the grace period ran out: a handler still running is
// taken over by the shutdown (its late result will be ignored).
func (r *run) claimForShutdown() phase {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.phase == phaseHandling && r.dropped == nil {
		r.dropped = ErrShutdown
		return phaseHandling
	}
	if r.phase == phaseDelivering {
		return phaseDelivering
	}
	return phaseDone
}

// start registers a claimed task as held and runs its handler on a new goroutine.
func (w *Worker) start(base context.Context, ct ClaimedTask) {
	t := newTask(ct, w.client)
	ctx, cancel := context.WithCancelCause(base)
	r := &run{task: t, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	t.drop = func(cause error) { w.dropRun(r, cause) }
	w.mu.Lock()
	r.handler = w.handlers[ct.HandlerName]
	w.held[ct.Id] = r
	w.notifyLocked()
	w.mu.Unlock()
	w.stats.claimed.Add(1)
	w.stats.inFlight.Add(1)
	go w.execute(r)
}

// dropRun stops a task the server took away or cancelled, and counts it once.
func (w *Worker) dropRun(r *run, cause error) {
	if !r.drop(cause) {
		return
	}
	w.log.Info("orch8: task stopped", "task_id", r.task.ID, "cause", cause.Error())
	if errors.Is(cause, ErrTaskCancelled) {
		w.stats.cancelled.Add(1)
	} else {
		w.stats.leaseLost.Add(1)
	}
	w.mu.Lock()
	w.notifyLocked()
	w.mu.Unlock()
}

func (w *Worker) execute(r *run) {
	defer w.finish(r)
	t := r.task
	log := w.log.With("task_id", t.ID, "handler", t.HandlerName, "attempt", t.Attempt)
	if h := w.opts.Hooks.OnTaskStart; h != nil {
		h(t)
	}
	if r.handler == nil {
		// The poll named our handlers, so this is a server fault; do not retry it here.
		r.handler = func(context.Context, *Task) (any, error) {
			return nil, &PermanentError{Err: fmt.Errorf("no handler for %q", t.HandlerName), Code: "unknown_handler"}
		}
	}
	log.Debug("orch8: task started")
	output, err := callHandler(r.ctx, r.handler, t)

	r.mu.Lock()
	if r.dropped != nil {
		r.mu.Unlock()
		log.Info("orch8: result discarded", "cause", context.Cause(r.ctx)) // no stale result (P-SDK-5)
		return
	}
	r.phase = phaseDelivering
	r.mu.Unlock()

	if err == nil {
		w.complete(r, output) // batched with other completions (P-SDK-12)
		return
	}
	rep := failureFor(err)
	rep.LeaseId = Ptr(t.LeaseID)
	var pe *panicError
	if errors.As(err, &pe) {
		rep.Details = jsonObject(map[string]any{"panic": fmt.Sprint(pe.value), "stack": truncate(pe.stack, 4000)})
	}
	w.deliverFailure(r, rep, err)
}

// callHandler runs the handler; a panic becomes a retryable "unhandled_error" (P-SDK-6).
func callHandler(ctx context.Context, h Handler, t *Task) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{value: p, stack: string(debug.Stack())}
		}
	}()
	return h(ctx, t)
}

type panicError struct {
	value any
	stack string
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

func (w *Worker) deliverFailure(r *run, rep TaskFailureReport, cause error) {
	w.deliver(r, "fail", func(ctx context.Context) error {
		_, e := w.client.FailTask(ctx, r.task.ID, rep)
		return e
	}, func() {
		w.stats.failed.Add(1)
		if h := w.opts.Hooks.OnTaskFail; h != nil {
			h(r.task, cause)
		}
	})
}

// failForShutdown fails a task whose handler outlived the grace period: code "shutdown",
// retryable, sent with a fresh context, not the cancelled one (P-SDK-7).
func (w *Worker) failForShutdown(r *run) {
	r.cancel(ErrShutdown)
	rep := TaskFailureReport{Error: "worker shut down before the handler finished", Retryable: Ptr(true),
		Code: Ptr(CodeShutdown), LeaseId: Ptr(r.task.LeaseID)}
	w.deliver(r, "fail", func(ctx context.Context) error {
		_, e := w.client.FailTask(ctx, r.task.ID, rep)
		return e
	}, func() {
		w.stats.failed.Add(1)
		if h := w.opts.Hooks.OnTaskFail; h != nil {
			h(r.task, ErrShutdown)
		}
	})
	w.release(r)
}

// deliver sends a fail (fails stay single calls, P-SDK-12) until the server takes it, the
// lease is lost, or the lease deadline passes during an outage (P-SDK-9). It never uses
// the Run context.
func (w *Worker) deliver(r *run, what string, send func(context.Context) error, onDone func()) {
	b := backoff{base: DefaultOutageBase, cap: DefaultOutageCap}
	log := w.log.With("task_id", r.task.ID)
	for {
		err := send(context.Background())
		switch {
		case err == nil:
			onDone()
			return
		case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrTaskCancelled):
			// The server refused the result: the task is no longer ours (P-LEASE-3, P-CANCEL-2).
			cause := ErrLeaseLost
			if errors.Is(err, ErrTaskCancelled) {
				cause = ErrTaskCancelled
			}
			log.Info("orch8: result refused", "result", what, "cause", cause.Error())
			w.dropRun(r, cause)
			return
		}
		var pe *ProblemError
		outage := errors.As(err, &pe) && IsRetryableStatus(pe.Status) || errors.Is(err, ErrUnavailable)
		wait := b.next()
		if !outage || time.Now().Add(wait).After(r.task.LeaseExpiresAt()) {
			log.Error("orch8: result not delivered, giving up", "result", what, "err", err)
			return
		}
		log.Warn("orch8: result not delivered, retrying", "result", what, "err", err, "in", wait)
		time.Sleep(wait)
		if r.droppedCause() != nil && !errors.Is(r.droppedCause(), ErrShutdown) {
			return // the heartbeat learned the lease is gone meanwhile
		}
	}
}

// finish ends a run: it leaves the held set and frees its slot.
func (w *Worker) finish(r *run) {
	r.mu.Lock()
	r.phase = phaseDone
	r.mu.Unlock()
	r.cancel(context.Canceled)
	w.release(r)
	close(r.done)
}

func (w *Worker) release(r *run) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held[r.task.ID] == r {
		delete(w.held, r.task.ID)
		w.stats.inFlight.Add(-1)
		w.notifyLocked()
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
