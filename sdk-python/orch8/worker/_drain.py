"""Shutdown: the grace period, then the `shutdown` failures (P-SDK-7, P-SDK-17, P-SDK-29)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from ..async_client import AsyncOrch8Client
from ._execute import SHUTDOWN, Outcome, Slot, elapsed_ms, report, send_fail
from ._logs import ERROR, WARNING, cause_text
from ._runtime import Settings
from .observe import Observer

# P-SDK-17: after the grace period the worker returns within 5 s: 2 s for the shutdown
# fails, then the steps of worker.py (completions in flight, deregistration).
SHUTDOWN_FAILS_S = 2.0


class DrainDeps(Protocol):
    client: AsyncOrch8Client
    observer: Observer
    settings: Settings
    end_grace: asyncio.Event
    second_signal: str | None

    def slots(self) -> Sequence[Slot]: ...


def shutdown_message(worker_id: str, grace_ms: int, second_signal: str | None) -> str:
    """P-SDK-29: why a handler was still running when its task was failed with `shutdown`."""
    if second_signal is not None:
        return f"worker {worker_id} shut down: second signal {second_signal} ended the grace period"
    return f"worker {worker_id} shut down: grace period of {grace_ms} ms ended"


async def drain(deps: DrainDeps) -> None:
    """Wait up to the grace period, then fail leftovers with `shutdown` (P-SDK-7, P-SDK-17)."""
    slots = list(deps.slots())
    runners = {s.runner for s in slots if s.runner is not None}
    if not runners:
        return
    grace_ms = deps.settings.grace_period_ms
    # Every runner done, or a second signal (P-SDK-17), or the grace period is over.
    all_done = asyncio.ensure_future(asyncio.wait(runners))
    ended = asyncio.ensure_future(deps.end_grace.wait())
    await asyncio.wait(
        {all_done, ended}, timeout=grace_ms / 1000, return_when=asyncio.FIRST_COMPLETED
    )
    all_done.cancel()  # cancels the waiting, not the runners
    ended.cancel()
    live = [s for s in slots if s.runner is not None and not s.runner.done()]
    # P-SDK-7: a result already on its way is not failed with `shutdown`: the server's answer
    # to it decides how the task ended (as in sdk-go and sdk-typescript).
    leftovers = [s for s in live if not s.delivering]
    in_flight = [s.runner for s in live if s.delivering and s.runner is not None]
    for slot in leftovers:
        slot.abandoned = True
        slot.cancel(SHUTDOWN)  # the handler's cancellation signal fires first
    why = shutdown_message(deps.settings.worker_id, grace_ms, deps.second_signal)
    if leftovers:
        message = f"{len(leftovers)} task(s) still running, failed with shutdown"
        deps.observer.line(WARNING, "grace_ended", message, None, why, tasks=len(leftovers))
    outcome = Outcome(error=why, retryable=True, code=SHUTDOWN)
    sends = [
        asyncio.ensure_future(send_fail(deps.client, s.ctx, report(deps.observer, s.ctx, outcome)))
        for s in leftovers
    ]
    deadline = asyncio.get_running_loop().time() + SHUTDOWN_FAILS_S
    if sends or in_flight:
        await asyncio.wait([*sends, *in_flight], timeout=SHUTDOWN_FAILS_S)
    # P-SDK-29, P-SDK-11: a fail or release still being re-sent (an outage, a long
    # Retry-After) is given up now, counted and its hook run, so nothing of ours outlives
    # run_async(). Completions handed to the completer end with its close (Worker._finish).
    stuck = {
        s.runner: s
        for s in live
        if s.delivering and not s.handed and s.runner is not None and not s.runner.done()
    }
    for runner, slot in stuck.items():
        slot.delivery_stopped = True
        runner.cancel()
    if stuck:
        await asyncio.wait(stuck)
    for slot, send in zip(leftovers, sends, strict=True):
        error = None if send.done() and send.exception() is None else send
        if error is None:
            ran_ms = elapsed_ms(slot) or 0.0  # the handler may still be running
            deps.observer.failed(slot.ctx, why, SHUTDOWN, True, ran_ms)
        else:
            exc = send.exception() if send.done() and not send.cancelled() else None
            send.cancel()
            deps.observer.error("fail", exc or TimeoutError("shutdown failure timed out"))
            cause = cause_text(exc) if exc is not None else "timed out"
            deps.observer.line(
                ERROR,
                "given_up",
                "shutdown failure not delivered; task given up as lease lost",
                slot.ctx,
                cause,
                operation="fail",
            )
            lost = "shutdown failure not delivered"
            deps.observer.abandoned(slot.ctx, "lease_lost", lost, elapsed_ms(slot), logged=True)
        slot.abort()
        if slot.runner is not None:
            slot.runner.cancel()  # sync handlers keep their (daemon) thread; result dropped
    ending = [s.runner for s in leftovers if s.runner is not None]
    if ending:
        # An async handler runs in its runner's task: one that ignores its cancellation keeps
        # it, and is left running (as a thread is) once the shutdown fails' time is up.
        left_s = max(0.0, deadline - asyncio.get_running_loop().time())
        await asyncio.wait(ending, timeout=left_s)
