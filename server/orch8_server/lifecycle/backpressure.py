"""Backpressure of one replica (docs/protocol.md 12a): the enqueue rate per tenant
(P-BP-1), the queue depth limit (P-BP-2), and the caps on waiting long-polls and
requests in progress (P-BP-3).

Every limit is off by default except the waiting-poll cap (10000), and an off limit
costs one attribute test on its path. A refusal stores nothing and changes nothing; it is
counted in `orch8_backpressure_rejections_total{reason}`.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from orch8_server.problems import Problem
from orch8_server.timefmt import monotonic_s

if TYPE_CHECKING:
    from orch8_server.config import Settings
    from orch8_server.metrics import Metrics
    from orch8_server.storage.base import Storage

DEFAULT_TENANT = "default"  # P-BP-1: until tenants exist (issue 17), everyone is this one
DEPTH_TTL_S = 1.0  # P-BP-2: a queue's depth is read at most once a second per replica


class TokenBucket:
    """`rate` tokens a second, holding at most `burst` (P-BP-1)."""

    __slots__ = ("burst", "rate", "stamp", "tokens")

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)  # a fresh bucket is full
        self.stamp = now

    def take(self, n: int, now: float) -> float:
        """Take `n` tokens and return 0.0, or take none and return the seconds until
        there will be `n`."""
        self.tokens = min(float(self.burst), self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= n:
            self.tokens -= n
            return 0.0
        return (n - self.tokens) / self.rate


def _unavailable(detail: str) -> Problem:
    return Problem("unavailable", detail, headers={"Retry-After": "1"})


class Backpressure:
    def __init__(self, settings: Settings, storage: Storage, metrics: Metrics) -> None:
        self.rate = settings.enqueue_rate
        self.burst = settings.enqueue_burst or max(1, math.ceil(settings.enqueue_rate))
        self.max_depth = settings.max_queue_depth
        self.max_waiting = settings.max_waiting_polls
        self.max_inflight = settings.max_inflight_requests
        self.limits_enqueues = bool(self.rate or self.max_depth)
        self.storage = storage
        self.rejections = metrics.backpressure_rejections
        self._buckets: dict[str, TokenBucket] = {}
        # P-BP-2, P-TEN-3: (tenant, queue) -> [depth, monotonic time it was read]
        self._depths: dict[tuple[str, str], list[float]] = {}
        self.inflight = 0  # P-BP-3: requests in progress (counted only with a cap)
        self.sleeping = 0  # P-BP-3: long-polls parked after finding nothing

    # P-BP-1, P-BP-2: enqueues ---------------------------------------------------------

    async def admit_enqueue(self, queues: list[str], tenant: str = DEFAULT_TENANT) -> None:
        """Check an enqueue of one task per entry of `queues` (a batch repeats a queue)
        before anything is stored; raise 422/429 when it may not pass."""
        if self.max_depth:
            for queue in dict.fromkeys(queues):
                await self._check_depth(tenant, queue)
        if self.rate:
            self._take_tokens(len(queues), tenant)
        if self.max_depth:  # admitted: what this second enqueues counts at once here
            for queue in queues:
                self._depths[(tenant, queue)][0] += 1

    def _take_tokens(self, n: int, tenant: str) -> None:
        if n > self.burst:  # P-BP-1: can never pass, so not a 429 to retry
            raise Problem(
                "validation_error",
                f"a batch of {n} tasks exceeds the enqueue burst of {self.burst} "
                f"(--enqueue-burst); send at most {self.burst} tasks per request",
                errors=[{"pointer": "/tasks", "detail": f"at most {self.burst} tasks"}],
            )
        now = monotonic_s()  # P-CLOCK-2: the tokens follow the test clock
        bucket = self._buckets.get(tenant)
        if bucket is None:
            bucket = self._buckets[tenant] = TokenBucket(self.rate, self.burst, now)
        wait_s = bucket.take(n, now)
        if wait_s:
            self.rejections.labels("enqueue_rate").inc()
            raise Problem(
                "rate_limited",
                f"enqueue rate of tenant {tenant} is {self.rate:g} tasks/s "
                f"(burst {self.burst}); retry after Retry-After",
                headers={"Retry-After": str(max(1, math.ceil(wait_s)))},
            )

    async def _check_depth(self, tenant: str, queue: str) -> None:
        now = time.monotonic()
        cached = self._depths.get((tenant, queue))
        if cached is None or now - cached[1] >= DEPTH_TTL_S:
            # Stamped before the read: concurrent enqueues use the old value meanwhile,
            # so each queue costs one bounded COUNT a second on this replica.
            if cached is None:
                cached = self._depths[(tenant, queue)] = [0.0, now]
            cached[1] = now
            try:
                cached[0] = await self.storage.queue_depth(tenant, queue, self.max_depth)
            except Exception:
                cached[1] = 0.0  # unread: the next enqueue reads it again
                raise
        if cached[0] >= self.max_depth:
            self.rejections.labels("queue_depth").inc()
            raise Problem(
                "rate_limited",
                f"queue {queue} holds {self.max_depth} or more pending and scheduled tasks "
                f"(--max-queue-depth {self.max_depth}); retry after Retry-After",
                headers={"Retry-After": "1"},
            )

    # P-BP-3: per-replica caps ---------------------------------------------------------

    def may_park(self) -> None:
        """Called by a poll whose immediate claim found nothing, before it waits."""
        if self.sleeping >= self.max_waiting:
            self.rejections.labels("waiting_polls").inc()
            raise _unavailable(
                f"this replica already holds {self.max_waiting} waiting polls "
                f"(--max-waiting-polls); poll again after Retry-After"
            )

    def enter_request(self) -> None:
        """Count a request in progress (only with --max-inflight-requests); the caller
        calls `leave_request` when it ends, unless this raised."""
        if self.inflight >= self.max_inflight:
            self.rejections.labels("inflight_requests").inc()
            raise _unavailable(
                f"this replica already serves {self.max_inflight} requests "
                f"(--max-inflight-requests); retry after Retry-After"
            )
        self.inflight += 1

    def leave_request(self) -> None:
        self.inflight -= 1
