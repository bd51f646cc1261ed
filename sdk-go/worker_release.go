package orch8

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Why a task was released: the reason field of the task_released log line (P-SDK-31).
const (
	ReleaseYield   = "yield"   // the handler returned Yield (P-SDK-32)
	ReleaseExpired = "expired" // good_until passed before the handler started (P-SDK-33)
)

// expired reports whether a task's good_until has passed by the worker's clock (P-SDK-33).
func expired(goodUntil *time.Time, now time.Time) bool {
	return goodUntil != nil && !now.Before(*goodUntil)
}

// deliverRelease gives the task back without spending an attempt (P-SDK-32, P-SDK-33),
// re-sending through outages until the lease deadline (P-SDK-9); a 409 gives it up as
// P-SDK-5 says, any other refusal gives it up at once (the lease then expires).
func (w *Worker) deliverRelease(r *run, body TaskRelease, reason string) {
	t := r.task
	b := backoff{base: DefaultOutageBase, cap: DefaultOutageCap}
	for {
		_, err := w.client.ReleaseTask(w.life, t.ID, body)
		if err == nil {
			w.released(r, body, reason)
			return
		}
		if w.life.Err() != nil {
			w.giveUp(r, OpRelease, "release not delivered before the worker stopped", causeText(err))
			return
		}
		w.fireError(OpRelease, err)
		if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrTaskCancelled) {
			w.abandon(r, refusalCause(err))
			return
		}
		wait := outageWait(&b, err)
		if !IsOutage(err) || time.Now().Add(wait).After(t.LeaseExpiresAt()) {
			why := "release refused"
			if IsOutage(err) {
				why = "release still undeliverable at the lease deadline"
			}
			w.giveUp(r, OpRelease, why, causeText(err))
			return
		}
		w.callFailed(OpRelease, err, "release", fmt.Sprintf("retrying in %d ms", wait.Milliseconds()),
			append(taskAttrs(t), "retry_in_ms", wait.Milliseconds())...)
		sleepCtx(w.life, wait)
		if r.droppedCause() != nil {
			return // the heartbeat learned meanwhile that the lease is gone
		}
	}
}

// released settles a run whose release the server acknowledged (P-SDK-11, P-SDK-31).
func (w *Worker) released(r *run, body TaskRelease, reason string) {
	if !r.settle(outcomeReleased) {
		return
	}
	w.release(r)
	t := r.task
	if reason == ReleaseExpired {
		w.line(slog.LevelInfo, "task_released", "task expired before it started; released without running", "",
			append(taskAttrs(t), "reason", reason, "good_until", t.GoodUntil.UTC().Format(time.RFC3339Nano))...)
		return
	}
	w.line(slog.LevelDebug, "task_released", fmt.Sprintf("task yielded; released (delay %d ms)", *body.DelayMs), "",
		append(taskAttrs(t), "reason", reason, "delay_ms", *body.DelayMs)...)
}
