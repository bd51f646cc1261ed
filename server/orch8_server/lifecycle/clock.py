"""The test clock (P-CLOCK-1..5): what `GET /clock` says and what `POST /clock/advance` does.

Every rule reads time through `timefmt.now_ms()`. With `--test-clock` that time stands
still; an advance moves it and then runs, here and before answering, each service that
fires timers (the same ticks the services run on their own intervals), so the caller sees
the state of the server at the new time: scheduled tasks and retry backoffs pending,
overdue tasks expired, expired leases reclaimed, silent workers dead, workflow timers
fired. The services' own ticks keep running meanwhile (they read the same frozen time, so
they find nothing new until the next advance).
"""

from __future__ import annotations

from typing import Any

from orch8_server import timefmt
from orch8_server.problems import Problem
from orch8_server.services import Service
from orch8_server.storage.base import Storage

# In this order: leases and silent workers first, so a task that becomes pending below (a
# promotion wakes parked polls) is not claimed by an idle worker and then reclaimed from it
# as `worker_lost` by the same advance; promotion before expiry, so a task scheduled and
# overdue expires in the same call; the workflow pump last, so steps enqueued by fired
# timers are in place.
TIMER_SERVICES = (
    "lease-expiry",
    "dead-workers",
    "scheduled-promotion",
    "good-until-expiry",
    "workflow-pump",
)


class TestClock:
    """Built by compose.py with the storage and the services whose ticks fire timers."""

    __test__ = False  # not a pytest class, whatever its name

    def __init__(self, storage: Storage, services: list[Service]) -> None:
        self.storage = storage
        by_name = {s.name: s for s in services}
        self._timers = [by_name[name] for name in TIMER_SERVICES]

    async def next_timer_at(self) -> int | None:
        """P-CLOCK-3: the earliest scheduled run, good_until or workflow timer; leases
        and worker liveness are not timers a test skips to."""
        found = [
            t
            for t in (
                await self.storage.next_scheduled_at(),
                await self.storage.next_expiry_at(),
                await self.storage.next_event_at(),
            )
            if t is not None
        ]
        return min(found) if found else None

    async def view(self, advanced_ms: int = 0) -> dict[str, Any]:
        nxt = await self.next_timer_at()
        return {
            "mode": "test" if timefmt.test_clock_on() else "system",
            "now": timefmt.iso(timefmt.now_ms()),
            "next_timer_at": None if nxt is None else timefmt.iso(max(nxt, timefmt.now_ms())),
            "advanced_ms": advanced_ms,
        }

    async def fire_due(self) -> None:
        """Run every timer service once at the current time (P-CLOCK-2)."""
        for service in self._timers:
            await service.run_once()

    async def advance(self, by_ms: int | None, to_next_timer: bool) -> dict[str, Any]:
        if not timefmt.test_clock_on():
            raise Problem(
                "clock_not_controllable",
                "this server reads the system clock; start it with --test-clock to advance time",
            )
        if (by_ms is None) == (not to_next_timer):
            raise Problem(
                "validation_error",
                "give exactly one of by_ms and to_next_timer: true",
                errors=[{"pointer": "", "detail": "exactly one of by_ms and to_next_timer"}],
            )
        start = timefmt.now_ms()
        await self.fire_due()  # what is due already fires first, at the time it was due
        if to_next_timer:
            nxt = await self.next_timer_at()
            by_ms = 0 if nxt is None else max(0, nxt - timefmt.now_ms())
        assert by_ms is not None
        if by_ms:
            timefmt.advance_test_clock(by_ms)
            await self.fire_due()
        return await self.view(timefmt.now_ms() - start)
