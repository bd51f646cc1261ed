package orch8

import (
	"errors"
	"time"
)

// RetryableError makes a handler's failure retryable (P-SDK-6). Build it with Retryable.
type RetryableError struct {
	Err error
	// After asks the server for this exact delay before the next attempt (P-RETRY-4);
	// zero leaves the task's backoff policy in charge.
	After time.Duration
	// Code is the machine code reported; "retryable_error" when empty.
	Code string
	// Details is stored with the failure.
	Details map[string]any
}

func (e *RetryableError) Error() string { return errText(e.Err, "retryable error") }
func (e *RetryableError) Unwrap() error { return e.Err }

// PermanentError fails the task at once, skipping retries (P-SDK-6, P-RETRY-5). Build it
// with Permanent.
type PermanentError struct {
	Err error
	// Code is the machine code reported; "permanent_error" when empty.
	Code string
	// Details is stored with the failure.
	Details map[string]any
}

func (e *PermanentError) Error() string { return errText(e.Err, "permanent error") }
func (e *PermanentError) Unwrap() error { return e.Err }

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

// failureFor turns a handler error into the fail report of P-SDK-6: PermanentError is
// permanent, RetryableError retryable, anything else retryable with "unhandled_error".
func failureFor(err error) TaskFailureReport {
	rep := TaskFailureReport{Error: errText(err, "handler failed"), Retryable: Ptr(true), Code: Ptr(CodeUnhandledError)}
	var perm *PermanentError
	var retry *RetryableError
	switch {
	case errors.As(err, &perm):
		rep.Retryable = Ptr(false)
		rep.Code = Ptr(orDefault(perm.Code, CodePermanentError))
		rep.Details = jsonObject(perm.Details)
	case errors.As(err, &retry):
		rep.Code = Ptr(orDefault(retry.Code, CodeRetryableError))
		rep.Details = jsonObject(retry.Details)
		if retry.After > 0 {
			rep.RetryAfterMs = Ptr(int(retry.After / time.Millisecond))
		}
	}
	return rep
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
