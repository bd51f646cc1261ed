package orch8

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

type phase int

const (
	phaseHandling   phase = iota // the handler runs
	phaseDelivering              // the handler returned; its result is being sent
	phaseDone
)

// outcome is how a claimed task left the worker; each is counted once (P-SDK-11).
type outcome int

const (
	outcomeNone outcome = iota
	outcomeCompleted
	outcomeFailed
	outcomeLeaseLost
	outcomeCancelled
	outcomeReleased // given back: a yield (P-SDK-32) or an expiry before the start (P-SDK-33)
)

// run is one claimed task inside the worker: its handler's context and where it stands.
type run struct {
	task    *Task
	handler Handler
	ctx     context.Context
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when the handler returned and its result is settled
	started time.Time
	// lease is the claim's lease length: lease.expires_at minus answered, the moment the
	// poll answer arrived, at least 0. The worker heartbeat cadence fits the shortest held
	// (P-SDK-30).
	lease    time.Duration
	answered time.Time

	mu      sync.Mutex
	phase   phase
	dropped error // why nothing may be sent for this task any more (P-SDK-5)
	outcome outcome
	ran     time.Duration // the handler's run time, once it returned
	code    string        // the failure code the server acknowledged (error.type, P-TEL-3)
	span    ProcessSpan   // nil without telemetry

	reporting bool   // counted in Worker.reporting; guarded by Worker.mu
	sending   func() // ends its count in Worker.sending, once finish counted the outcome
	handed    bool   // counted in Worker.handed; guarded by Worker.mu
}

// drop fires the handler's cancellation signal; from now on nothing is sent for the task
// (P-SDK-5). It settles outcome o unless one is settled, and reports whether it did.
func (r *run) drop(cause error, o outcome) (settled bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The outcome first, in the same step as the cancel: a handler that returns on the
	// cancel ends its run, and a run ending unsettled counts as lease lost (release), which
	// once beat a cancellation to it.
	if r.outcome == outcomeNone {
		r.outcome, settled = o, true
	}
	if r.dropped == nil && r.phase != phaseDone {
		r.dropped = cause
		r.cancel(cause)
	}
	return settled
}

func (r *run) droppedCause() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// settle records the task's outcome; only the first one counts.
func (r *run) settle(o outcome) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.outcome != outcomeNone {
		return false
	}
	r.outcome = o
	return true
}

func (r *run) runTime() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ran > 0 {
		return r.ran
	}
	return time.Since(r.started)
}

// delivering: the handler returned and its result is being sent.
func (r *run) delivering() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.phase == phaseDelivering
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

// runKey names one claimed attempt: a task reaped and claimed again by this worker while
// its first run still goes has two runs, each with its own bookkeeping and slot.
type runKey struct{ taskID, leaseID string }

func (r *run) key() runKey { return runKey{r.task.ID, r.task.LeaseID} }

// heldLocked is the run of taskID whose lease is the newest this worker holds (the last
// claimed), or nil. Callers hold w.mu.
func (w *Worker) heldLocked(taskID string) *run {
	var newest *run
	for k, r := range w.held {
		if k.taskID == taskID && (newest == nil || r.started.After(newest.started)) {
			newest = r
		}
	}
	return newest
}

// start registers a claimed task as held and runs its handler on a new goroutine.
// receive is the context Telemetry.Receive returned for the poll (base without telemetry);
// answered is when the poll answer arrived, the start of the claim's lease (P-SDK-30).
func (w *Worker) start(base, receive context.Context, ct ClaimedTask, answered time.Time) {
	t := newTask(ct, w.client, w.opts.LeaseDuration)
	started := time.Now()
	var span ProcessSpan
	if w.tel != nil {
		base, span = w.startProcess(base, receive, ct, started) // current for the handler (P-TEL-3)
	}
	ctx, cancel := context.WithCancelCause(base)
	r := &run{task: t, ctx: ctx, cancel: cancel, done: make(chan struct{}), started: started, span: span,
		lease: max(ct.Lease.ExpiresAt.Sub(answered), 0), answered: answered} // P-SDK-30
	t.drop = func(cause error) { w.abandon(r, cause) }
	w.mu.Lock()
	r.handler = w.handlers[ct.HandlerName]
	stale := w.heldLocked(ct.ID) // a run of this task under a lease the server since reaped
	w.held[r.key()] = r
	free := w.freeLocked()
	w.notifyLocked()
	w.mu.Unlock()
	if stale != nil && !stale.delivering() {
		// The new lease proves the old one gone: the first run stops and leaves its own
		// slot when its handler returns (P-SDK-5). One being delivered is decided by the
		// server's answer to its result, as a heartbeat's lease_lost would be.
		w.abandon(stale, ErrLeaseLost)
	}
	w.count(func(s *Stats) { s.TasksClaimed++; s.InFlight++ })
	if w.tel != nil {
		w.tel.Slots(base, 1, free) // P-TEL-4
	}
	go w.execute(r)
}

// abandon gives a task up with no result sent because the server said so: the lease was
// lost or the task cancelled (P-SDK-5, P-SDK-11).
func (w *Worker) abandon(r *run, cause error) {
	reason, ok := w.drop(r, cause)
	if !ok {
		return
	}
	level := slog.LevelWarn
	if reason == ReasonCancelled {
		level = slog.LevelInfo
	}
	w.line(level, "abandoned", "task given up, no result sent: "+reason, cause.Error(), append(taskAttrs(r.task), "reason", reason)...)
}

// giveUp gives up a result the worker could not deliver (P-SDK-9, P-SDK-27); it counts as
// lease lost and is logged at error (P-SDK-31 given_up).
func (w *Worker) giveUp(r *run, op, why, cause string) {
	if _, ok := w.drop(r, fmt.Errorf("%w: %s: %s", ErrLeaseLost, why, cause)); ok {
		w.line(slog.LevelError, "given_up", why+"; task given up as lease lost", cause, append(taskAttrs(r.task), "operation", op)...)
	}
}

// drop settles a task given up with no result sent, once; it reports the reason and
// whether this call settled it.
func (w *Worker) drop(r *run, cause error) (string, bool) {
	o, reason := outcomeLeaseLost, ReasonLeaseLost
	if errors.Is(cause, ErrTaskCancelled) {
		o, reason = outcomeCancelled, ReasonCancelled
	}
	if !r.drop(cause, o) {
		return reason, false
	}
	callHook(w, "OnTaskAbandoned", w.opts.Hooks.OnTaskAbandoned, TaskAbandonedEvent{Task: r.task, Reason: reason})
	w.mu.Lock()
	w.notifyLocked()
	w.mu.Unlock()
	return reason, true
}

func (w *Worker) execute(r *run) {
	defer w.finish(r)
	t := r.task
	if expired(t.GoodUntil, time.Now()) {
		// P-SDK-33: it waited past its deadline before a handler could start: never run it;
		// released, the server ends it expired.
		w.reported(r)
		end := w.beginDelivery()
		r.mu.Lock()
		r.phase, r.sending = phaseDelivering, end
		r.mu.Unlock()
		w.deliverRelease(r, TaskRelease{LeaseID: Ptr(t.LeaseID), DelayMs: Ptr(0)}, ReleaseExpired)
		return
	}
	if r.handler == nil {
		w.reported(r)
		w.failNoHandler(r)
		return
	}
	callHook(w, "OnTaskStart", w.opts.Hooks.OnTaskStart, TaskStartEvent{Task: t})
	w.line(slog.LevelDebug, "task_started", "task started", "", taskAttrs(t)...)
	output, err := callHandler(r.ctx, r.handler, t)
	w.reported(r)

	// Counted before the phase changes, so a Run past its drain cannot miss it (P-SDK-29).
	end := w.beginDelivery()
	r.mu.Lock()
	r.ran = time.Since(r.started)
	if r.dropped != nil {
		r.mu.Unlock()
		end()
		return // no stale result (P-SDK-5); abandon logged why
	}
	r.phase, r.sending = phaseDelivering, end
	r.mu.Unlock()

	var y *YieldError
	if errors.As(err, &y) {
		w.deliverRelease(r, yieldRelease(y, t.LeaseID), ReleaseYield) // P-SDK-32
		return
	}
	if err != nil {
		w.deliverFailure(r, failureFor(err), time.Time{})
		return
	}
	raw, jerr := json.Marshal(output)
	if jerr != nil {
		// P-SDK-15: an output that is not strict JSON can never be delivered; fail it once.
		w.line(slog.LevelWarn, "task_rejected", "task failed with invalid_output", causeText(jerr), append(taskAttrs(t), "code", CodeInvalidOutput)...)
		w.deliverFailure(r, invalidOutput(jerr), time.Time{})
		return
	}
	w.handOver(r)                       // P-SDK-3: the next poll need not wait for this answer
	w.complete(r, json.RawMessage(raw)) // batched with other completions (P-SDK-12)
}

// failNoHandler fails a task this worker has no handler for, permanently (P-SDK-14).
func (w *Worker) failNoHandler(r *run) {
	end := w.beginDelivery()
	r.mu.Lock()
	r.phase, r.sending = phaseDelivering, end
	r.mu.Unlock()
	t := r.task
	cause := fmt.Sprintf("no handler named %q (known: %s)", t.HandlerName, strings.Join(w.names, ", "))
	w.line(slog.LevelWarn, "task_rejected", "task failed with no_handler", cause, append(taskAttrs(t), "code", CodeNoHandler)...)
	w.deliverFailure(r, TaskFailureReport{Error: fmt.Sprintf("no handler registered for %q", t.HandlerName), Retryable: Ptr(false),
		Code: Ptr(CodeNoHandler), Details: JSONObject{"handler_name": t.HandlerName, "known_handlers": w.names}}, time.Time{})
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

// reported counts r's slot as one that frees as soon as its result is settled: the poll
// threshold waits for such slots, never for running handlers (P-SDK-26).
func (w *Worker) reported(r *run) {
	w.mu.Lock()
	if w.held[r.key()] == r && !r.reporting {
		r.reporting = true
		w.reporting++
	}
	w.mu.Unlock()
}

// handOver frees r's slot as its completion goes to the completer (P-SDK-3).
func (w *Worker) handOver(r *run) {
	w.mu.Lock()
	if w.held[r.key()] == r && !r.handed {
		r.handed = true
		w.handed++
		w.notifyLocked()
	}
	w.mu.Unlock()
}

// finish ends a run: it leaves the held set and frees its slot.
func (w *Worker) finish(r *run) {
	r.mu.Lock()
	r.phase = phaseDone
	r.mu.Unlock()
	r.cancel(context.Canceled)
	if !errors.Is(r.droppedCause(), ErrShutdown) {
		w.release(r) // a task taken over by the shutdown is released once its fail is settled
	}
	close(r.done)
	r.mu.Lock()
	end := r.sending
	r.sending = nil
	r.mu.Unlock()
	if end != nil {
		end() // after the count: Run waits for this (P-SDK-29)
	}
}

// release removes a run from the held set and counts its outcome (P-SDK-11).
func (w *Worker) release(r *run) {
	r.settle(outcomeLeaseLost) // nothing was settled: the task will come back after its lease
	w.mu.Lock()
	if w.held[r.key()] != r {
		w.mu.Unlock()
		return
	}
	delete(w.held, r.key())
	if r.reporting {
		w.reporting--
	}
	if r.handed {
		w.handed--
	}
	free := w.freeLocked()
	w.mu.Unlock()
	r.mu.Lock()
	o := r.outcome
	r.mu.Unlock()
	if w.tel != nil {
		w.endProcess(r, o, free) // outside w.mu: telemetry never runs under the worker's lock
	}
	w.count(func(s *Stats) {
		switch o {
		case outcomeCompleted:
			s.TasksCompleted++
		case outcomeFailed:
			s.TasksFailed++
		case outcomeCancelled:
			s.TasksCancelled++
		case outcomeReleased:
			s.TasksReleased++
		default:
			s.TasksLeaseLost++
		}
		s.InFlight--
	})
	w.mu.Lock()
	w.notifyLocked()
	w.mu.Unlock()
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
