"""Capped exponential backoff with full jitter for riding out outages (P-SDK-9)."""

from __future__ import annotations

import random


class Backoff:
    """500 ms doubling, capped at 30 s, full jitter; `reset()` after the first success."""

    def __init__(self, initial: float = 0.5, cap: float = 30.0) -> None:
        self.initial = initial
        self.cap = cap
        self._failures = 0

    def next_delay(self) -> float:
        """Seconds to wait after one more consecutive failure."""
        ceiling = min(self.cap, self.initial * 2 ** min(self._failures, 32))
        self._failures += 1
        return random.uniform(0, ceiling)

    def reset(self) -> None:
        self._failures = 0

    @property
    def failures(self) -> int:
        return self._failures
