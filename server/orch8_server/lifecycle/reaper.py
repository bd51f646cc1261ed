"""The reaper's jobs, each run by its own service (services.py, wired in compose.py):
expired leases (P-LEASE-6), overdue tasks (P-EXPIRE-1), due scheduled tasks (the
fallback of the timer, P-STATE-2), held tasks of keys nothing holds and of rate limits
(P-KEY-3, P-RATE-3). Dead workers are `Workers.sweep_dead` (P-WORKER-5)."""

from __future__ import annotations

import logging

from orch8_server.lifecycle import transitions
from orch8_server.lifecycle.attempts import LEASE_EXPIRED_CODE
from orch8_server.lifecycle.effects import Work

BATCH = 500
KEYS_S = 5.0  # how often admit_stranded looks (it walks each key with held tasks once)
log = logging.getLogger("orch8.reaper")


async def reclaim_expired_leases(work: Work) -> bool:
    """One batch of running tasks whose lease expired: each attempt ends lease_expired
    and counts. True when the batch was full (more are waiting)."""
    async with work() as uow:
        expired = await uow.db.expired_leases(uow.now, BATCH)
        for task in expired:
            change = transitions.reclaim(
                task, uow.now, LEASE_EXPIRED_CODE, "lease expired before the task finished"
            )
            await uow.apply(change)
    return len(expired) == BATCH


async def expire_overdue(work: Work) -> None:
    """Tasks whose good_until passed while they waited end expired (set-based)."""
    async with work() as uow:
        uow.expired += await uow.db.expire_overdue(uow.now)


async def promote_due(work: Work) -> None:
    """Scheduled tasks whose run_at arrived become pending, if the timer missed them."""
    async with work() as uow:
        uow.promoted += await uow.db.promote_due(uow.now)


async def admit_stranded(work: Work) -> None:
    """P-KEY-3's safety net: keys with held tasks and no task in a slot, which nothing
    would ever admit (a crash between the commit that freed the last slot and its
    admission, on PostgreSQL where a completion commits alone). Logged: each is a sign of
    a crash, or of such an admission still in flight when the sweep looked."""
    async with work() as uow:
        stranded = await uow.db.stranded_keys(BATCH)
        if stranded:
            log.warning(
                "admitting held tasks of concurrency keys that had no task in a slot",
                extra={"keys": len(stranded), "first": f"{stranded[0][0]}/{stranded[0][1]}"},
            )
            uow.keys.update(stranded)
        # P-RATE-3's net too: rate keys with held tasks are looked at again (a crash between
        # a claim and the admission it allows); a key with nothing to admit changes nothing.
        uow.rate_keys.update(await uow.db.paced_keys(BATCH))
