"""Queue history (P-OBS-5): the last hour of every queue, one point per minute.

The request path only bumps in-memory counters per (queue, minute): tasks enqueued,
completed, attempts failed, and a histogram of queue waits (ready to claimed). A flusher
adds them to the `queue_minutes` table every FLUSH_S (and at shutdown) with additive
upserts, so every replica's counts add up and any replica answers the same; it also
records each queue's pending depth in the current minute (the latest sample wins) and
drops rows older than the window.

The histogram has fixed log-spaced buckets (bucket k >= 1 holds waits in
[2^((k-1)/4), 2^(k/4)) ms, bucket 0 holds waits under 1 ms), so histograms of replicas
merge by adding counts per bucket; a percentile is read by linear interpolation inside
its bucket (at most ~19 % off).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orch8_server import timefmt
from orch8_server.storage.base import Row

if TYPE_CHECKING:
    from orch8_server._generated.models import QueueHistory, QueueHistoryPoint
    from orch8_server.storage.base import Storage

log = logging.getLogger("orch8.history")

BUCKET_MS = 60_000  # one point per minute
WINDOW_MINUTES = 60  # the most a history answer covers (the current minute included)
KEEP_MINUTES = 61  # rows older than this are dropped
FLUSH_S = 2.0  # P-OBS-5: an answer is at most ~5 s behind (flush + a claim in flight)
STOP_FLUSH_S = 3.0  # the shutdown flush's time limit
DEPTH_EVERY_S = 5.0  # pending depth sample: a count per queue, so not at every flush
_STEPS_PER_DOUBLING = 4
_MAX_BUCKET = 160  # 2^40 ms: any wait


def wait_bucket(wait_ms: int) -> int:
    """The histogram bucket of a queue wait (fixed bounds, the same on every replica)."""
    if wait_ms < 1:
        return 0
    return min(_MAX_BUCKET, 1 + math.floor(_STEPS_PER_DOUBLING * math.log2(wait_ms)))


def _bounds(bucket: int) -> tuple[float, float]:
    if bucket == 0:
        return 0.0, 1.0
    return 2 ** ((bucket - 1) / _STEPS_PER_DOUBLING), 2 ** (bucket / _STEPS_PER_DOUBLING)


def percentile(hist: Mapping[int, int], q: float) -> int | None:
    """The q-quantile (0..1) of a wait histogram, None when it is empty."""
    total = sum(hist.values())
    if total <= 0:
        return None
    rank = q * total
    seen = 0
    for bucket in sorted(hist):
        n = hist[bucket]
        if n <= 0:
            continue
        if seen + n >= rank:
            low, high = _bounds(bucket)
            return int(low + (high - low) * max(0.0, rank - seen) / n)
        seen += n
    return int(_bounds(max(hist))[1])  # pragma: no cover (float rounding)


@dataclass
class MinuteCounts:
    """What one replica adds to one (tenant, queue, minute) row."""

    tenant: str
    queue_name: str
    minute: int  # epoch minute: epoch ms // BUCKET_MS
    enqueued: int = 0
    completed: int = 0
    failed: int = 0
    waits: Counter[int] = field(default_factory=Counter)

    def add(self, other: MinuteCounts) -> None:
        self.enqueued += other.enqueued
        self.completed += other.completed
        self.failed += other.failed
        self.waits.update(other.waits)

    def row(self) -> Row:
        """The storage row: wait_hist as a JSON object of bucket -> claims (or None)."""
        return {
            "tenant": self.tenant,
            "queue_name": self.queue_name,
            "minute": self.minute,
            "enqueued": self.enqueued,
            "completed": self.completed,
            "failed": self.failed,
            "wait_hist": {str(k): n for k, n in sorted(self.waits.items())} or None,
        }


class History:
    """In-memory counts of this replica, their flusher, and the history answer."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        # Per tenant (P-TEN-3): (tenant, queue, minute) -> counts
        self._counts: dict[tuple[str, str, int], MinuteCounts] = {}
        self._queues: dict[tuple[str, str], int] = {}  # (tenant, queue) -> last active minute
        self._depth_at = 0.0
        self._lock = asyncio.Lock()

    # The hot path: in-memory increments only -------------------------------------------

    def _slot(self, tenant: str, queue: str, at_ms: int) -> MinuteCounts:
        minute = at_ms // BUCKET_MS
        slot = self._counts.get((tenant, queue, minute))
        if slot is None:
            slot = self._counts[(tenant, queue, minute)] = MinuteCounts(tenant, queue, minute)
            self._queues[(tenant, queue)] = minute
        return slot

    def enqueued(self, tenant: str, pairs: Mapping[tuple[str, str], int]) -> None:
        """Tasks of `tenant` created, per (queue, handler), just committed."""
        now = timefmt.now_ms()
        for (queue, _handler), n in pairs.items():
            self._slot(tenant, queue, now).enqueued += n

    def claimed(self, rows: Iterable[Row]) -> None:
        """Claimed rows: their queue wait, from ready (created or run_at) to claimed."""
        for row in rows:
            started = row.get("lease_started_at") or row["started_at"]  # this claim's time
            ready = max(row["created_at"], row.get("run_at") or row["created_at"])
            slot = self._slot(row["tenant"], row["queue_name"], started)
            slot.waits[wait_bucket(started - ready)] += 1

    def completed(self, rows: Iterable[Row | None]) -> None:
        now = timefmt.now_ms()
        for row in rows:
            if row is not None:
                self._slot(row["tenant"], row["queue_name"], now).completed += 1

    def failed(self, tenant: str, queue: str, n: int = 1) -> None:
        """An attempt failed (retried or final)."""
        self._slot(tenant, queue, timefmt.now_ms()).failed += n

    def finished(self, tenant: str, queue: str, outcome: str) -> None:
        """A task resolved by an operator: counted as completed or failed."""
        slot = self._slot(tenant, queue, timefmt.now_ms())
        if outcome == "completed":
            slot.completed += 1
        else:
            slot.failed += 1

    # The flusher (run by the history service, compose.py) -----------------------------

    async def final_flush(self) -> None:
        """At shutdown: flush what is left, bounded, so a database that is gone does not
        hold the shutdown up; counts that could not be written are named as lost."""
        try:
            await asyncio.wait_for(self.flush(depth=False), timeout=STOP_FLUSH_S)
        except Exception as exc:
            log.warning("queue history not flushed at shutdown: %s", exc)

    async def flush(self, depth: bool = True) -> None:
        """Add this replica's counts to the stored minutes; sample depth when it is due."""
        async with self._lock:
            loop_now = asyncio.get_running_loop().time()
            now = timefmt.now_ms()
            minute = now // BUCKET_MS
            depths: dict[tuple[str, str], int] = {}
            sample = depth and loop_now - self._depth_at >= DEPTH_EVERY_S
            counts, self._counts = list(self._counts.values()), {}
            if not counts and not sample:
                return
            try:
                if sample:
                    pending = await self.storage.pending_counts()
                    for queue, last in list(self._queues.items()):
                        if last < minute - KEEP_MINUTES:
                            del self._queues[queue]
                    # Depth 0 too for the queues that had traffic here in the window.
                    depths = {q: pending.get(q, 0) for q in {*pending, *self._queues}}
                await self.storage.add_queue_minutes(
                    [
                        c.row()
                        for c in sorted(counts, key=lambda c: (c.tenant, c.queue_name, c.minute))
                    ],
                    minute,
                    depths,
                    minute - KEEP_MINUTES,
                )
            except BaseException:
                for c in counts:  # keep them for the next flush
                    slot = self._counts.setdefault((c.tenant, c.queue_name, c.minute), c)
                    if slot is not c:
                        slot.add(c)
                raise
            if sample:
                self._depth_at = loop_now

    # The answer (GET /queues/{queue_name}/history) ---------------------------------------

    async def history(self, tenant: str, queue: str, minutes: int) -> QueueHistory:
        """The last `minutes` of the tenant's `queue`, oldest first, the current minute
        included (P-TEN-3)."""
        await self.flush()  # this replica's own counts are in the answer
        now = timefmt.now_ms()
        last = now // BUCKET_MS
        first = last - minutes + 1
        stored = {r["minute"]: r for r in await self.storage.queue_minutes(tenant, queue, first)}
        return {
            "queue_name": queue,
            "bucket_ms": BUCKET_MS,
            "generated_at": timefmt.iso(now),
            "points": [_point(m, stored.get(m)) for m in range(first, last + 1)],
        }


def _point(minute: int, row: Row | None) -> QueueHistoryPoint:
    if row is None:
        row = {}
    hist = {int(k): int(n) for k, n in (row.get("wait_hist") or {}).items()}
    return {
        "at": timefmt.iso(minute * BUCKET_MS),
        "enqueued": row.get("enqueued", 0),
        "completed": row.get("completed", 0),
        "failed": row.get("failed", 0),
        "depth": row.get("depth"),
        "wait_p50_ms": percentile(hist, 0.50),
        "wait_p95_ms": percentile(hist, 0.95),
    }
