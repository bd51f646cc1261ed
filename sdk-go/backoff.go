package orch8

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is capped exponential backoff with full jitter: the n-th wait is uniform in
// [0, min(cap, base*2^n)). Used by client retries (P-SDK-2) and outages (P-SDK-9).
type backoff struct {
	base, cap time.Duration
	n         int
}

func (b *backoff) next() time.Duration {
	ceiling := b.base
	for i := 0; i < b.n && ceiling < b.cap; i++ {
		ceiling *= 2
	}
	if ceiling > b.cap {
		ceiling = b.cap
	}
	b.n++
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling)
}

func (b *backoff) reset() { b.n = 0 }

// sleepCtx waits d or until ctx ends; it reports whether the full wait elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
