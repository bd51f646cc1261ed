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
from orch8_server.lifecycle.engine import Engine
from orch8_server.problems import Problem

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


async def next_timer_at(engine: Engine) -> int | None:
    """P-CLOCK-3: the earliest scheduled run, good_until or workflow timer; leases and
    worker liveness are not timers a test skips to."""
    async with engine.storage.transaction() as tx:
        event = await tx.workflows.next_event_at()
    found = [
        t
        for t in (
            await engine.storage.next_scheduled_at(),
            await engine.storage.next_expiry_at(),
            event,
        )
        if t is not None
    ]
    return min(found) if found else None


async def view(engine: Engine, advanced_ms: int = 0) -> dict[str, Any]:
    nxt = await next_timer_at(engine)
    return {
        "mode": "test" if timefmt.test_clock_on() else "system",
        "now": timefmt.iso(timefmt.now_ms()),
        "next_timer_at": None if nxt is None else timefmt.iso(max(nxt, timefmt.now_ms())),
        "advanced_ms": advanced_ms,
    }


async def fire_due(engine: Engine) -> None:
    """Run every timer service once at the current time (P-CLOCK-2)."""
    by_name = {s.name: s for s in engine.services}
    for name in TIMER_SERVICES:
        await by_name[name].run_once()


async def advance(engine: Engine, by_ms: int | None, to_next_timer: bool) -> dict[str, Any]:
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
    await fire_due(engine)  # what is due already fires first, at the time it was due
    if to_next_timer:
        nxt = await next_timer_at(engine)
        by_ms = 0 if nxt is None else max(0, nxt - timefmt.now_ms())
    assert by_ms is not None
    if by_ms:
        timefmt.advance_test_clock(by_ms)
        await fire_due(engine)
    return await view(engine, timefmt.now_ms() - start)
