package orch8

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/orch8/orch8-workers/sdk-go/api"
)

// IsOutage is the SDK's one outage classifier (P-SDK-16): a transport failure (connection
// refused or reset, a timeout) or an answer 408, 429, 500, 502, 503 or 504. It decides the
// client's automatic retries (P-SDK-2), the worker's poll backoff (P-SDK-9) and whether a
// result is re-sent.
func IsOutage(err error) bool {
	var pe *ProblemError
	if !errors.As(err, &pe) {
		return false
	}
	if pe.Code == CodeConnectionError {
		return true
	}
	switch pe.Status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// maxWorkerRetryAfter caps how long the worker honours a Retry-After before its next poll
// or re-send (P-SDK-16).
const maxWorkerRetryAfter = api.WorkerRetryAfterCapMs * time.Millisecond

// withJitter adds a random 0-10% to a server-given delay (P-SDK-16), so many workers told
// the same Retry-After do not come back at the same instant.
func withJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d + rand.N(d/10+1)
}

// outageWait is the worker's wait after an outage: the next backoff step, replaced by
// min(Retry-After, 60 s) plus jitter when the answer carried one (P-SDK-9, P-SDK-16).
func outageWait(b *backoff, err error) time.Duration {
	wait := b.next()
	var pe *ProblemError
	if errors.As(err, &pe) && pe.RetryAfter > 0 {
		wait = withJitter(min(pe.RetryAfter, maxWorkerRetryAfter))
	}
	return wait
}

// isRefusal is a 401 or 403: a key the server does not know or that may not make the call.
// A worker rides it out like an outage (P-SDK-24), since an operator may fix the key on
// the server (SIGHUP) while the worker keeps running; the client never retries it.
func isRefusal(err error) bool {
	return errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrForbidden)
}
