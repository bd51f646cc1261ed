"""Waiting for an event with a time limit, without losing the waiter's cancellation."""

from __future__ import annotations

import asyncio


async def wait_event(event: asyncio.Event, timeout_s: float | None) -> bool:
    """Whether `event` was set within `timeout_s` seconds (None: no limit).

    asyncio.wait, not wait_for: before Python 3.12, wait_for returns when its inner step
    finished in the same loop turn as the caller's cancel, and drops the cancel. A loop the
    worker cancels at shutdown (the heartbeats) then went on, and the worker never exited.
    """
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter}, timeout=timeout_s)
    finally:
        waiter.cancel()
    return event.is_set()
