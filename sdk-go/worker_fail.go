package orch8

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of a failure report (P-SDK-27): a fail must fit the server's body limit whatever
// the handler put in its error, so the real error is stored instead of the task being
// left running until its lease dies.
const (
	maxFailMessageBytes     = 16384 // UTF-8 bytes of `error` kept
	maxFailDetailsBytes     = 65536 // JSON bytes of `details` sent as they are
	failDetailsPreviewBytes = 4096  // JSON bytes of `details` kept as the preview
)

// cutUTF8 is the longest prefix of s of at most n bytes that does not end inside a
// character (P-SDK-27).
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Back off over continuation bytes, at most to the start of the character they end.
	for back := 0; n > 0 && back < utf8.UTFMax-1 && !utf8.RuneStart(s[n]); back++ {
		n--
	}
	return s[:n]
}

// boundFailure bounds a fail's message and details before it is sent (P-SDK-27).
func boundFailure(rep TaskFailureReport) TaskFailureReport {
	rep.Error = strings.ReplaceAll(rep.Error, "\x00", "\uFFFD") // P-ERR-5 refuses NUL
	if n := len(rep.Error); n > maxFailMessageBytes {
		rep.Error = cutUTF8(rep.Error, maxFailMessageBytes) + fmt.Sprintf(" [truncated from %d bytes]", n)
	}
	if rep.Details != nil {
		if raw, err := compactJSON(rep.Details); err == nil && len(raw) > maxFailDetailsBytes {
			rep.Details = JSONObject{"truncated": true, "bytes": len(raw), "preview": cutUTF8(string(raw), failDetailsPreviewBytes)}
		}
	}
	return rep
}

// shutdownMessage is the `shutdown` fail's message, saying why the handler was still
// running (P-SDK-29). signal is the signal that ended the grace period ("" when it ran
// out; "StopNow" when StopNow ended it without a signal).
func shutdownMessage(workerID string, grace time.Duration, signal string) string {
	switch signal {
	case "":
		return fmt.Sprintf("worker %s shut down: grace period of %d ms ended", workerID, grace.Milliseconds())
	case stopNowCause:
		return fmt.Sprintf("worker %s shut down: StopNow ended the grace period", workerID)
	}
	return fmt.Sprintf("worker %s shut down: second signal %s ended the grace period", workerID, signal)
}

// shutdownFailure is the fail of a handler still running when the grace period ended:
// code "shutdown", retryable, message from shutdownMessage (P-SDK-7, P-SDK-29).
func shutdownFailure(message string) TaskFailureReport {
	return TaskFailureReport{Error: message, Retryable: Ptr(true), Code: Ptr(CodeShutdown)}
}

// invalidOutput is the permanent fail of an output that is not strict JSON; it is never
// re-sent (P-SDK-15).
func invalidOutput(jerr error) TaskFailureReport {
	return TaskFailureReport{Error: "output cannot be encoded as JSON: " + jerr.Error(), Retryable: Ptr(false),
		Code: Ptr(CodeInvalidOutput), Details: JSONObject{"type": typeName(jerr), "message": jerr.Error()}}
}

// outputRejected is the permanent fail of a completion the server refused on its own
// (P-SDK-15); it carries no output, so it fits.
func outputRejected(pe *ProblemError) TaskFailureReport {
	return TaskFailureReport{Error: "the server refused the task's output: " + pe.Error(), Retryable: Ptr(false),
		Code: Ptr(CodeOutputRejected), Details: JSONObject{"status": pe.Status, "code": pe.Code}}
}

// failForShutdown fails a task whose handler outlived the grace period: code "shutdown",
// retryable, sent with a fresh context, not the cancelled one (P-SDK-7), by deadline.
func (w *Worker) failForShutdown(r *run, message string, deadline time.Time) {
	r.cancel(ErrShutdown)
	w.deliverFailure(r, shutdownFailure(message), deadline)
	w.release(r) // its handler may never return; the slot and the count are settled now
}

// deliverFailure sends a fail (fails stay single calls, P-SDK-12), bounded by P-SDK-27,
// until the server takes it, the lease is lost, or the lease deadline (or the shutdown's
// hard deadline, when not zero) passes during an outage (P-SDK-9). A fail refused as a
// whole is re-sent once without checkpoint (P-SDK-27). It never uses the Run context, and
// gives up once Run ended its life (after deregistering), so nothing it started outlives
// Run (P-SDK-29).
func (w *Worker) deliverFailure(r *run, rep TaskFailureReport, hard time.Time) {
	t := r.task
	rep = boundFailure(rep)
	rep.LeaseID = Ptr(t.LeaseID)
	b := backoff{base: DefaultOutageBase, cap: DefaultOutageCap}
	deadline := func() time.Time {
		if at := t.LeaseExpiresAt(); hard.IsZero() || at.Before(hard) {
			return at
		}
		return hard
	}
	var refused error // the first refusal of the report as a whole (P-SDK-27)
	for {
		ctx, cancel := w.life, context.CancelFunc(func() {})
		if !hard.IsZero() {
			ctx, cancel = context.WithDeadline(ctx, hard)
		}
		_, err := w.client.FailTask(ctx, t.ID, rep)
		cancel()
		if err == nil {
			w.failed(r, rep)
			return
		}
		if w.life.Err() != nil {
			w.giveUp(r, OpFail, "failure report not delivered before the worker stopped", causeText(err))
			return
		}
		w.fireError(OpFail, err)
		if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrTaskCancelled) {
			// The server refused the result: the task is no longer ours (P-LEASE-3, P-CANCEL-2).
			w.abandon(r, refusalCause(err))
			return
		}
		if pe, ok := refusedAsWhole(err); ok {
			if refused == nil {
				// P-SDK-27: most likely too large (a checkpoint over the body limit); the code
				// and message still fit, so the real error is stored.
				refused = err
				w.callFailed(OpFail, err, "failure report", "re-sending it once without checkpoint, details replaced by report_refused", taskAttrs(t)...)
				rep.Checkpoint = nil
				rep.Details = JSONObject{"report_refused": map[string]any{"status": pe.Status, "code": answerCode(pe)}}
				continue
			}
			w.giveUp(r, OpFail, "failure report refused twice", causeText(refused)+"; then "+causeText(err))
			return
		}
		wait := outageWait(&b, err)
		if !IsOutage(err) || time.Now().Add(wait).After(deadline()) {
			why := "failure report refused"
			if IsOutage(err) {
				why = "failure report still undeliverable at the lease deadline"
			}
			w.giveUp(r, OpFail, why, causeText(err))
			return
		}
		w.callFailed(OpFail, err, "failure report", fmt.Sprintf("retrying in %d ms", wait.Milliseconds()),
			append(taskAttrs(t), "retry_in_ms", wait.Milliseconds())...)
		sleepCtx(w.life, wait) // the end of Run's life ends the wait; the next call then gives up
		if c := r.droppedCause(); c != nil && !errors.Is(c, ErrShutdown) {
			return // the heartbeat learned meanwhile that the lease is gone
		}
	}
}

// failed settles a run whose fail the server acknowledged (P-SDK-11).
func (w *Worker) failed(r *run, rep TaskFailureReport) {
	t := r.task
	r.mu.Lock()
	r.code = *rep.Code
	r.mu.Unlock()
	if r.settle(outcomeFailed) {
		w.release(r) // counted before the hook runs, so the hook sees current stats
		kind := "permanent"
		if *rep.Retryable {
			kind = "retryable"
		}
		w.line(slog.LevelDebug, "task_failed", "task failed with "+*rep.Code+" ("+kind+")", "",
			append(taskAttrs(t), "code", *rep.Code, "retryable", *rep.Retryable)...)
		callHook(w, "OnTaskFail", w.opts.Hooks.OnTaskFail,
			TaskFailEvent{Task: t, Code: *rep.Code, Retryable: *rep.Retryable, Duration: r.runTime()})
	}
}

// refusalCause maps a 409 answer onto the cause a dropped task carries.
func refusalCause(err error) error {
	if errors.Is(err, ErrTaskCancelled) {
		return ErrTaskCancelled
	}
	return ErrLeaseLost
}

// compactJSON is the JSON text P-SDK-27 measures: compact, characters as themselves (no
// HTML escaping of <, > and &), so every SDK counts the same bytes.
func compactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
