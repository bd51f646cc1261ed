package orch8

import (
	"errors"
	"fmt"
	"reflect"
	"time"
)

// RetryableError makes a handler's failure retryable (P-SDK-6, P-SDK-20). Build it with
// Retryable, or as a literal to set Code, Details or Checkpoint.
type RetryableError struct {
	Err error
	// After asks the server for this exact delay before the next attempt, sent as
	// retry_after_ms (P-RETRY-4); zero leaves the task's backoff policy in charge.
	After time.Duration
	// Code is the machine code reported; "retryable_error" when empty.
	Code string
	// Details is stored with the failure.
	Details map[string]any
	// Checkpoint is saved for the next attempt (P-CKPT-1); nil keeps the last one.
	Checkpoint map[string]any
}

func (e *RetryableError) Error() string { return errText(e.Err, "retryable error") }
func (e *RetryableError) Unwrap() error { return e.Err }

// PermanentError fails the task at once, skipping retries (P-SDK-6, P-RETRY-5, P-SDK-20).
// Build it with Permanent, or as a literal to set Code, Details or Checkpoint.
type PermanentError struct {
	Err error
	// Code is the machine code reported; "permanent_error" when empty.
	Code string
	// Details is stored with the failure.
	Details map[string]any
	// Checkpoint is stored with the failure (P-CKPT-1); nil keeps the last one.
	Checkpoint map[string]any
}

func (e *PermanentError) Error() string { return errText(e.Err, "permanent error") }
func (e *PermanentError) Unwrap() error { return e.Err }

// YieldError gives the task back to be run again later without spending an attempt
// (P-SDK-32, seed 002): the worker releases it with Checkpoint after Delay. Build it with
// Yield; find it with errors.As.
type YieldError struct {
	// Checkpoint is stored and handed to the next claim (P-CKPT-1); nil keeps the last one.
	Checkpoint map[string]any
	// Delay before the task can be claimed again; clamped to 0..24 h (the contract's bounds).
	Delay time.Duration
}

func (e *YieldError) Error() string { return fmt.Sprintf("task yielded (delay %s)", e.Delay) }

// Yield is what a handler returns to yield: return nil, orch8.Yield(checkpoint, delay).
func Yield(checkpoint map[string]any, delay time.Duration) error {
	return &YieldError{Checkpoint: checkpoint, Delay: delay}
}

// maxReleaseDelay is the contract's bound of TaskRelease.delay_ms.
const maxReleaseDelay = 86_400_000 * time.Millisecond

// yieldRelease is the release a yield asks for (P-SDK-32), for the claim's lease.
func yieldRelease(y *YieldError, leaseID string) TaskRelease {
	delay := min(max(y.Delay, 0), maxReleaseDelay)
	return TaskRelease{LeaseID: Ptr(leaseID), DelayMs: Ptr(int(delay / time.Millisecond)), Checkpoint: y.Checkpoint}
}

// Retryable marks err as retryable, asking for a delay of after (zero: the server's backoff).
func Retryable(err error, after time.Duration) error {
	return &RetryableError{Err: err, After: after}
}

// Permanent marks err as permanent: the task fails without further attempts.
func Permanent(err error) error {
	return &PermanentError{Err: err}
}

func errText(err error, fallback string) string {
	if err == nil {
		return fallback
	}
	return err.Error()
}

// failureFor turns a handler error into the fail report of P-SDK-6 and P-SDK-20:
// PermanentError is permanent, RetryableError retryable, anything else (a panic included)
// retryable with code "unhandled_error" and details {type, message, stack}.
func failureFor(err error) TaskFailureReport {
	var perm *PermanentError
	var retry *RetryableError
	var pe *panicError
	switch {
	case errors.As(err, &perm):
		return TaskFailureReport{Error: errText(err, "handler failed"), Retryable: Ptr(false),
			Code: Ptr(orDefault(perm.Code, CodePermanentError)), Details: perm.Details, Checkpoint: perm.Checkpoint}
	case errors.As(err, &retry):
		rep := TaskFailureReport{Error: errText(err, "handler failed"), Retryable: Ptr(true),
			Code: Ptr(orDefault(retry.Code, CodeRetryableError)), Details: retry.Details, Checkpoint: retry.Checkpoint}
		if retry.After > 0 {
			rep.RetryAfterMs = Ptr(int(retry.After / time.Millisecond))
		}
		return rep
	case errors.As(err, &pe):
		return TaskFailureReport{Error: errText(err, "handler panicked"), Retryable: Ptr(true), Code: Ptr(CodeUnhandledError),
			Details: JSONObject{"type": typeName(pe.value), "message": fmt.Sprint(pe.value), "stack": truncate(pe.stack, 4000)}}
	}
	return TaskFailureReport{Error: errText(err, "handler failed"), Retryable: Ptr(true), Code: Ptr(CodeUnhandledError),
		Details: JSONObject{"type": typeName(err), "message": errText(err, ""), "stack": ""}}
}

// typeName is the Go type of an error or panic value, e.g. "*fs.PathError" (P-SDK-20).
func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return reflect.TypeOf(v).String()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
