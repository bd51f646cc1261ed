package orch8

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
			w.mu.Lock()
			interval := w.interval
			w.mu.Unlock()
			w.line(slog.LevelInfo, "registered", "worker registered", "", "url", w.client.cfg.BaseURL,
				"heartbeat_interval_ms", interval.Milliseconds())
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		w.fireError(OpRegister, err)
		refused := isRefusal(err) // P-SDK-24: 401/403 back off too, the worker keeps running
		if !IsOutage(err) && !refused {
			url := w.client.BaseURL()
			w.line(slog.LevelError, "config_error", "registration at "+url+" refused for good; the worker stops",
				causeText(err), append([]any{"url", url}, answerAttrs(err)...)...)
			return registrationError(url, err)
		}
		wait := outageWait(&outage, err)
		w.callFailed(OpRegister, err, "registration", fmt.Sprintf("retrying in %d ms", wait.Milliseconds()), "retry_in_ms", wait.Milliseconds())
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

// minLeaseHeartbeat is the shortest cadence a short lease may ask for (P-SDK-30).
const minLeaseHeartbeat = 100 * time.Millisecond

// heartbeatLoop sends one worker heartbeat per interval listing every held task, on its
// own goroutine so a busy handler never starves it (P-SDK-4). The interval fits the
// leases held now (P-SDK-30): the loop wakes whenever the held set changes and computes the
// next heartbeat again, so a short-lease task claimed during a long wait gets its first
// heartbeat within a third of its lease, and the server's interval is back once that task
// has left.
func (w *Worker) heartbeatLoop(ctx context.Context) {
	last := time.Now() // registration counts as the first heartbeat
	for {
		w.mu.Lock()
		due, changed := w.nextHeartbeatLocked(last), w.changed
		w.mu.Unlock()
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-changed: // a task came or went: compute the next heartbeat again (P-SDK-30)
				t.Stop()
				continue
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		last = time.Now()
		w.heartbeat(ctx)
	}
}

// leaseHeartbeat is how often a task with lease L needs a heartbeat: L/3, never under
// 100 ms (P-SDK-30).
func leaseHeartbeat(lease time.Duration) time.Duration {
	return max(lease/3, minLeaseHeartbeat)
}

// nextHeartbeatLocked is when the next worker heartbeat is due, given the last one
// (P-SDK-30): the server's interval after it, or sooner when a task a heartbeat would list
// needs one within a third of its lease of the later of that heartbeat and its claim. So
// the cadence is min(interval, L/3) for the shortest lease L held now. An explicit
// WorkerOptions.HeartbeatInterval is kept as given (it can turn heartbeats off), as in the
// other SDKs. Callers hold w.mu.
func (w *Worker) nextHeartbeatLocked(last time.Time) time.Time {
	due := last.Add(w.interval)
	if w.opts.HeartbeatInterval > 0 {
		return due
	}
	for _, r := range w.held {
		if r.droppedCause() == nil {
			since := last
			if r.answered.After(since) {
				since = r.answered
			}
			if d := since.Add(leaseHeartbeat(r.lease)); d.Before(due) {
				due = d
			}
		}
	}
	return due
}

func (w *Worker) heartbeat(ctx context.Context) {
	w.mu.Lock()
	ids := make([]string, 0, len(w.held))
	// The attempt each task id names in this request: the answer is about that lease. A
	// new attempt of the same task claimed while the request was out is not the one a
	// lease_lost or cancel_requested answer speaks of (P-SDK-5).
	asked := make(map[string]*run, len(w.held))
	for k, r := range w.held {
		if r.droppedCause() == nil && !slices.Contains(ids, k.taskID) {
			ids = append(ids, k.taskID)
			asked[k.taskID] = w.heldLocked(k.taskID)
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
			w.callFailed(OpHeartbeat, err, "worker heartbeat", "")
		}
		return
	}
	w.health.heartbeated()
	if w.tel != nil {
		w.tel.Heartbeat(ctx, HeartbeatOK) // P-TEL-4
	}
	for _, ts := range res.Tasks {
		w.mu.Lock()
		r := w.heldLocked(ts.TaskID)
		w.mu.Unlock()
		switch {
		case r == nil || r != asked[ts.TaskID]: // gone, or a newer attempt than the one asked about
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
		w.line(slog.LevelInfo, "directive", "directive terminate", "", "directive", DirectiveTerminate)
		w.stopFor("terminate directive")
	}
}
