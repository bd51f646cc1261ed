"""Capped exponential backoff with full jitter for riding out outages (P-SDK-9, P-SDK-16)."""

from __future__ import annotations

import random

from .._http import jittered
from .._units import ms_option

MAX_WORKER_RETRY_AFTER_MS = 60_000  # P-SDK-16: a worker waits at most 60 s for Retry-After


class Backoff:
    """500 ms doubling, capped at 30 s, full jitter; `reset()` after the first success."""

    def __init__(
        self,
        initial_ms: int | None = None,
        cap_ms: int | None = None,
        *,
        initial: float | None = None,
        cap: float | None = None,
    ) -> None:
        self.initial_ms = ms_option("Backoff", "initial_ms", initial_ms, "initial", initial, 500)
        self.cap_ms = ms_option("Backoff", "cap_ms", cap_ms, "cap", cap, 30_000)
        self._failures = 0

    def next_delay_ms(self, retry_after_ms: float | None = None) -> float:
        """Milliseconds to wait after one more consecutive failure.

        P-SDK-16: a Retry-After replaces the computed delay for this wait (capped at 60 s,
        plus 0-10%); the sequence still advances, so the next outage waits longer.
        """
        ceiling = min(self.cap_ms, self.initial_ms * 2 ** min(self._failures, 32))
        self._failures += 1
        if retry_after_ms is not None:
            return jittered(min(retry_after_ms, MAX_WORKER_RETRY_AFTER_MS))
        return random.uniform(0, ceiling)

    def next_delay(self) -> float:
        """Deprecated: `next_delay_ms() / 1000`."""
        return self.next_delay_ms() / 1000

    def reset(self) -> None:
        self._failures = 0

    @property
    def failures(self) -> int:
        return self._failures
