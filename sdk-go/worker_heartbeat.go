package orch8

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/orch8/orch8-workers/sdk-go/api"
)

// register announces the worker and learns the heartbeat cadence (P-WORKER-1, P-SDK-21).
// Outages, 401 and 403 are ridden out with backoff (P-SDK-9, P-SDK-24); any other answer
// (404, 405, 501 from something that is not an Orch8 server, a 422 for the registration's
// own fields) is a configuration error that ends Run at once (P-SDK-28).
func (w *Worker) register(ctx context.Context) error {
	host, _ := os.Hostname()
	reg := WorkerRegistration{
		WorkerID:    w.opts.WorkerID,
		Hostname:    optString(host),
		PID:         Ptr(os.Getpid()),
		Handlers:    w.names,
		Queues:      w.opts.registeredQueues(), // P-SDK-21, P-SDK-23
		Concurrency: Ptr(w.opts.Concurrency),
		Labels:      &w.opts.Labels,
		SDK:         Ptr("orch8-go/" + Version),
	}
	outage := backoff{base: DefaultOutageBase, cap: DefaultOutageCap}
	for {
		rec, err := w.client.RegisterWorker(ctx, reg)
		if err == nil {
			w.health.heartbeated() // P-TEL-5: registration counts as a heartbeat
			w.setInterval(rec.HeartbeatIntervalMs)
			if rec.Directive == DirectiveQuiet {
				w.setQuiet(&w.serverQuiet, true)
			}
			w.log.Info("orch8: worker registered", "handlers", w.names, "concurrency", w.opts.Concurrency)
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		w.fireError(OpRegister, err)
		refused := isRefusal(err) // P-SDK-24: 401/403 back off too, the worker keeps running
		if !IsOutage(err) && !refused {
			err = registrationError(w.client.BaseURL(), err)
			w.log.Error("orch8: registration refused; stopping the worker", "err", err.Error())
			return err
		}
		wait := outageWait(&outage, err)
		msg := "orch8: registration failed, retrying"
		if refused {
			msg = "orch8: registration refused, retrying"
		}
		w.log.Warn(msg, append(causeAttrs(err), "in", wait)...)
		if !sleepCtx(ctx, wait) {
			return ctx.Err()
		}
	}
}

// registrationError names the server URL, the HTTP status and the problem code (or
// http_<status> for an answer that is not a problem), so a wrong ORCH8_URL is plain from
// the message alone (P-SDK-28).
func registrationError(base string, err error) error {
	var pe *ProblemError
	if errors.As(err, &pe) {
		return fmt.Errorf("orch8: worker registration at %s refused: HTTP %d %s: %w",
			base, pe.Status, answerCode(pe), err)
	}
	return fmt.Errorf("orch8: worker registration at %s failed: %w", base, err)
}

func (w *Worker) setInterval(ms int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.opts.HeartbeatInterval > 0:
		w.interval = w.opts.HeartbeatInterval
	case ms > 0:
		w.interval = time.Duration(ms) * time.Millisecond
	}
}

// heartbeatLoop sends one worker heartbeat per interval listing every held task, on its
// own goroutine so a busy handler never starves it (P-SDK-4).
func (w *Worker) heartbeatLoop(ctx context.Context) {
	for {
		w.mu.Lock()
		interval := w.interval
		w.mu.Unlock()
		if !sleepCtx(ctx, interval) {
			return
		}
		w.heartbeat(ctx)
	}
}

func (w *Worker) heartbeat(ctx context.Context) {
	w.mu.Lock()
	ids := make([]string, 0, len(w.held))
	for k, r := range w.held {
		if r.droppedCause() == nil && !slices.Contains(ids, k.taskID) {
			ids = append(ids, k.taskID)
		}
	}
	state := api.WorkerHeartbeatStateRunning
	switch {
	case w.stopping:
		state = api.WorkerHeartbeatStateTerminating
	case w.localQuiet || w.serverQuiet:
		state = api.WorkerHeartbeatStateQuiet
	}
	w.mu.Unlock()
	sort.Strings(ids)

	res, err := w.client.HeartbeatWorker(ctx, w.opts.WorkerID,
		WorkerHeartbeat{State: &state, ActiveTaskIDs: ids, LeaseMs: optMillis(w.opts.LeaseDuration)})
	if err != nil {
		if ctx.Err() == nil {
			if w.tel != nil {
				w.tel.Heartbeat(ctx, HeartbeatError) // P-TEL-4
			}
			w.fireError(OpHeartbeat, err)
			w.log.Warn("orch8: worker heartbeat failed", causeAttrs(err)...)
		}
		return
	}
	w.health.heartbeated()
	if w.tel != nil {
		w.tel.Heartbeat(ctx, HeartbeatOK) // P-TEL-4
	}
	for _, ts := range res.Tasks {
		w.mu.Lock()
		r := w.heldLocked(ts.TaskID) // the answer is about the lease it holds now
		w.mu.Unlock()
		switch {
		case r == nil:
		case r.delivering() && (ts.LeaseLost || ts.CancelRequested):
			// The result is on its way: our own completion may be what ended the lease, so
			// the server's answer to the result decides, not this heartbeat.
		case ts.LeaseLost:
			w.abandon(r, ErrLeaseLost) // P-WORKER-2, P-SDK-5
		case ts.CancelRequested:
			w.abandon(r, ErrTaskCancelled) // P-CANCEL-1, P-SDK-5
		case ts.LeaseExpiresAt != nil:
			r.task.setLeaseExpiresAt(*ts.LeaseExpiresAt)
		}
	}
	w.setInterval(res.HeartbeatIntervalMs)
	switch res.Directive { // P-WORKER-3
	case DirectiveQuiet: // the operator flag only; local quiet is independent (P-SDK-18)
		w.setQuiet(&w.serverQuiet, true)
	case DirectiveRunning:
		w.setQuiet(&w.serverQuiet, false)
	case DirectiveTerminate:
		w.log.Info("orch8: terminate directive received")
		w.Stop()
	}
}
