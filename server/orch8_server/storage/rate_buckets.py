"""The token bucket of a rate limit (P-RATE-1..3), the same arithmetic on both backends.

A bucket gains `limit` tokens per `period_ms`; an admission takes one. Tokens and the
tasks admitted but not yet claimed (`ready`) together never exceed `burst`: an admitted
task holds its token until a worker claims it. So however long workers were away, at most
`burst` tasks start at once, and over any window of t ms at most burst + limit * t /
period_ms start (P-RATE-2). Every change of `ready` runs an admission (a claim, a cancel,
an expiry), so the `ready` stored at the last one held until now, and the refill since
is capped by it. When tasks still wait for a token, the instant the next one comes is
returned: the storage stores it as the limit's `next_at`, and the scheduled-task timer
fires then.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(slots=True)
class Bucket:
    limit: int
    period_ms: int
    burst: int
    tokens: float
    refilled_at: int
    ready: int = 0  # admitted and unclaimed at the last admission

    def refill(self, now: int) -> None:
        gained = max(0, now - self.refilled_at) * self.limit / self.period_ms
        self.tokens = min(float(max(0, self.burst - self.ready)), self.tokens + gained)
        self.refilled_at = now

    def room(self, now: int, ready: int) -> int:
        """How many held tasks may be admitted now, with `ready` admitted and unclaimed."""
        self.refill(now)
        self.ready = ready
        return max(0, min(math.floor(self.tokens), self.burst - ready))

    def take(self, admitted: int, now: int, more: bool) -> int | None:
        """Spend a token per admitted task. Returns when to look again: the next token's
        instant while tasks wait for one, None when none waits or the admitted ones wait
        for a worker (a claim looks again, P-RATE-2)."""
        self.tokens -= admitted
        self.ready += admitted
        if not more or self.ready >= self.burst:
            return None
        missing = max(0.0, 1.0 - self.tokens)
        return now + max(1, math.ceil(missing * self.period_ms / self.limit))


@dataclass(slots=True)
class Admitted:
    """What an admission of rate keys did: the tasks it admitted, as (tenant, queue,
    handler) for wake-ups, and the earliest next token to arm the timer for."""

    labels: list[tuple[str, str, str]] = field(default_factory=list)
    timer: int | None = None

    def arm(self, at: int | None) -> None:
        if at is not None and (self.timer is None or at < self.timer):
            self.timer = at
