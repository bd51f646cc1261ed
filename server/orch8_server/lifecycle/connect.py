"""Start-up database connection with retries (P-OBS-6).

The server listens even when its database is unreachable; until the storage is open
(connected and migrated) every route but /health/live answers 503 `unavailable`. Tries
are spaced by exponential, jittered backoff: the n-th wait is drawn in [d/2, d] with
d = min(initial * 2^(n-1), cap), so replicas restarted together do not retry in step.
Each failed try is logged as a warning naming its cause. After `max_attempts` failed
tries (0 = never give up) the caller exits non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable

from orch8_server.config import Settings

log = logging.getLogger("orch8.startup")

TRY_TIMEOUT_S = 15.0  # one try (connect + migrate): a host that drops packets fails too


class DatabaseGaveUp(Exception):
    """Start-up stopped trying: the database stayed unreachable, or refused for good."""


class Connector:
    """Tries `open` until it succeeds; `close` cleans up after a failed try."""

    def __init__(
        self,
        open_: Callable[[], Awaitable[None]],
        close: Callable[[], Awaitable[None]],
        settings: Settings,
        rng: random.Random,
    ) -> None:
        self._open = open_
        self._close = close
        self.initial_ms = settings.db_retry_initial_ms
        self.max_ms = settings.db_retry_max_ms
        self.max_attempts = settings.db_retry_max_attempts
        self.rng = rng
        self.failures = 0
        self.next_delay_ms = 0  # the wait before the next try (Retry-After meanwhile)

    def delay_ms(self, failures: int) -> int:
        """The wait after `failures` failed tries (>= 1): exponential, jittered, capped."""
        ceiling = min(self.initial_ms * 2 ** min(failures - 1, 40), self.max_ms)
        return max(1, round(self.rng.uniform(ceiling / 2, ceiling)))

    @property
    def exhausted(self) -> bool:
        return self.max_attempts > 0 and self.failures >= self.max_attempts

    async def try_once(self) -> bool:
        """One try: True when open. A schema newer than this server (RuntimeError from
        the migrations) is not retried: it raises DatabaseGaveUp."""
        try:
            await asyncio.wait_for(self._open(), timeout=TRY_TIMEOUT_S)
            return True
        except RuntimeError as exc:
            await self._clean_up()
            raise DatabaseGaveUp(str(exc)) from exc
        except Exception as exc:
            await self._clean_up()
            self.failures += 1
            cause = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            self.next_delay_ms = 0 if self.exhausted else self.delay_ms(self.failures)
            tries = f"{self.failures}/{self.max_attempts or 'unlimited'}"
            log.warning(
                f"database unreachable (try {tries}): {cause}"
                + ("" if self.exhausted else f"; retrying in {self.next_delay_ms} ms"),
                extra={"cause": cause, "attempt": self.failures, "retry_in_ms": self.next_delay_ms},
            )
            return False

    async def keep_trying(self) -> None:
        """Wait and try again until open; DatabaseGaveUp after max_attempts failures."""
        while not self.exhausted:
            await asyncio.sleep(self.next_delay_ms / 1000)
            if await self.try_once():
                return
        raise DatabaseGaveUp(
            f"database unreachable after {self.failures} tries "
            f"(--db-retry-max-attempts {self.max_attempts}); giving up"
        )

    async def _clean_up(self) -> None:
        # A half-open storage (a pool made, the migration failed) must not leak.
        with contextlib.suppress(Exception):
            await self._close()
