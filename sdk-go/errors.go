package orch8

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/orch8/orch8-workers/sdk-go/api"
)

// Sentinel errors, one per row of docs/protocol.md section 12; test with errors.Is.
var (
	ErrNotFound      = errors.New("orch8: not found")
	ErrLeaseLost     = errors.New("orch8: lease lost")
	ErrTaskCancelled = errors.New("orch8: task cancelled")
	ErrConflict      = errors.New("orch8: conflict")
	ErrValidation    = errors.New("orch8: validation failed")
	ErrUnauthorized  = errors.New("orch8: unauthorized")
	ErrForbidden     = errors.New("orch8: forbidden") // P-AUTH-3, P-SDK-24: never retried
	ErrRateLimited   = errors.New("orch8: rate limited")
	ErrUnavailable   = errors.New("orch8: unavailable")
)

// ErrShutdown is the cancellation cause a handler sees when the grace period ran out (P-SDK-7).
var ErrShutdown = errors.New("orch8: worker shutting down")

// ErrInvalidOptions is wrapped by every error NewWorker returns for options it refuses
// before any request (P-SDK-23); the message names the option.
var ErrInvalidOptions = errors.New("orch8: invalid worker options")

// CodeConnectionError is the code of a ProblemError made from a network failure (section 12).
const CodeConnectionError = "connection_error"

// FieldProblem locates one invalid field with a JSON pointer (P-ERR-2).
type FieldProblem = api.FieldProblem

// ProblemError is an RFC 9457 problem answered by the server (P-ERR-1), or a network
// failure with Code "connection_error". errors.Is matches it against the sentinel its
// Code (or, for a body without a code, its Status) maps to.
type ProblemError struct {
	Status   int
	Code     string
	Type     string
	Title    string
	Detail   string
	Instance string
	Errors   []FieldProblem
	// RetryAfter is the server's Retry-After hint (zero when absent).
	RetryAfter time.Duration
	// Err is the underlying network error for connection_error problems.
	Err error
}

func (e *ProblemError) Error() string {
	var b strings.Builder
	b.WriteString("orch8: ")
	if e.Status > 0 {
		fmt.Fprintf(&b, "%d ", e.Status)
	}
	b.WriteString(e.Code)
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	for _, f := range e.Errors {
		fmt.Fprintf(&b, "; %s %s", f.Pointer, f.Detail)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, " (%v)", e.Err)
	}
	return b.String()
}

// Unwrap exposes the network error behind a connection_error.
func (e *ProblemError) Unwrap() error { return e.Err }

// Is maps the problem onto the sentinel errors of section 12.
func (e *ProblemError) Is(target error) bool {
	s := sentinelFor(e.Code, e.Status)
	return s != nil && s == target
}

var sentinelByCode = map[string]error{
	"malformed_json":         ErrValidation,
	"payload_too_deep":       ErrValidation, // P-ERR-5
	"unsupported_value":      ErrValidation, // P-ERR-5
	"headers_too_large":      ErrValidation, // P-HTTP-1 (431)
	"validation_error":       ErrValidation,
	"payload_too_large":      ErrValidation,
	"unsupported_media_type": ErrValidation,
	"unauthorized":           ErrUnauthorized,
	"forbidden":              ErrForbidden,
	"not_found":              ErrNotFound,
	"lease_lost":             ErrLeaseLost,
	"task_cancelled":         ErrTaskCancelled,
	"invalid_state":          ErrConflict,
	"clock_not_controllable": ErrConflict, // P-CLOCK-1
	"rate_limited":           ErrRateLimited,
	"unavailable":            ErrUnavailable,
	"request_timeout":        ErrUnavailable, // P-HTTP-2: 408 is an outage (P-SDK-16)
	CodeConnectionError:      ErrUnavailable,
}

// sentinelFor falls back on the status when a body carried no known code (a proxy's 502).
func sentinelFor(code string, status int) error {
	if s, ok := sentinelByCode[code]; ok {
		return s
	}
	if code != "" && code != "unknown" {
		return nil // method_not_allowed, internal: only *ProblemError (section 12)
	}
	switch status {
	case 400, 413, 415, 422, 431:
		return ErrValidation
	case 401:
		return ErrUnauthorized
	case 403:
		return ErrForbidden
	case 404:
		return ErrNotFound
	case 409:
		return ErrConflict
	case 429:
		return ErrRateLimited
	case 408, 502, 503, 504:
		return ErrUnavailable
	}
	return nil
}

// IsRetryableStatus is the HTTP status helper of P-SDK-6 for your own failures: 408, 429
// and 5xx are retryable, any other 4xx is permanent. The SDK's own retries and backoff
// use IsOutage (P-SDK-16).
func IsRetryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// problemFromResponse builds a ProblemError from any error answer, problem+json or not.
func problemFromResponse(resp *http.Response, body []byte) *ProblemError {
	pe := &ProblemError{Status: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"))}
	var p api.Problem
	if err := json.Unmarshal(body, &p); err == nil && p.Code != "" {
		pe.Code, pe.Type, pe.Title, pe.Detail, pe.Errors = p.Code, p.Type, p.Title, p.Detail, p.Errors
		if p.Instance != nil {
			pe.Instance = *p.Instance
		}
		return pe
	}
	// Not a problem body (a proxy, a crashed server): keep what can be said.
	pe.Code = "unknown"
	pe.Title = http.StatusText(resp.StatusCode)
	pe.Detail = strings.TrimSpace(string(body))
	if len(pe.Detail) > 200 {
		pe.Detail = pe.Detail[:200]
	}
	return pe
}

// answerCode is the problem's code, or "http_<status>" when the answer was not a problem
// (a proxy's page, something that is not an Orch8 server: P-SDK-27, P-SDK-28).
func answerCode(pe *ProblemError) string {
	if (pe.Code == "" || pe.Code == "unknown") && pe.Status > 0 {
		return fmt.Sprintf("http_%d", pe.Status)
	}
	return pe.Code
}

// connectionError is a transport failure as a ProblemError whose Detail names the server
// and the innermost cause (P-SDK-22): "no answer from http://h:3001: connection refused",
// not only a wrapper's text.
func connectionError(err error, base string, timeout time.Duration) *ProblemError {
	return &ProblemError{Code: CodeConnectionError, Title: "connection error",
		Detail: fmt.Sprintf("no answer from %s: %s", base, innermostCause(err, timeout)), Err: err}
}

// innermostCause words the deepest error of a transport failure: "connection refused",
// "connection reset by peer", "timed out after 10s", "lookup h: no such host".
func innermostCause(err error, timeout time.Duration) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		if timeout > 0 {
			return fmt.Sprintf("timed out after %v", timeout)
		}
		return "timed out"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "connection closed by the server (EOF)"
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// parseRetryAfter reads delay-seconds or an HTTP date; zero when absent or malformed.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
