"""The worker's concurrent loops: registration, heartbeats, claiming, running, draining."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import socket
from typing import TYPE_CHECKING

from .._version import USER_AGENT
from ..errors import Orch8Error
from ._execute import SHUTDOWN, Outcome, Slot, deliver, report, run_handler
from .observe import log

if TYPE_CHECKING:
    from .worker import Worker


async def _sleep_unless_stopping(worker: Worker, seconds: float) -> None:
    assert worker.stopping is not None
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(worker.stopping.wait(), timeout=max(0.0, seconds))


def _transient(exc: Orch8Error) -> bool:
    return exc.status is None or exc.status in (408, 429) or exc.status >= 500


async def register_until_ok(worker: Worker) -> float | None:
    """Register (P-WORKER-1), riding out outages (P-SDK-9); the heartbeat interval in seconds.

    None means shutdown was requested before the server could be reached.
    """
    assert worker.client is not None and worker.stopping is not None
    backoff = worker.new_backoff()
    while not worker.stopping.is_set():
        try:
            record = await worker.client.register_worker(
                worker.worker_id,
                hostname=socket.gethostname()[:255],
                pid=os.getpid(),
                handlers=list(worker.handler_names),
                queues=[worker.queue_name or "default"],
                concurrency=worker.concurrency,
                labels=worker.labels or None,
                sdk=USER_AGENT,
            )
        except Orch8Error as exc:
            if not _transient(exc):
                raise
            delay = backoff.next_delay()
            log.warning(
                "register failed, retrying",
                extra=worker.observer.extra(error=str(exc), retry_in_s=round(delay, 3)),
            )
            await _sleep_unless_stopping(worker, delay)
            continue
        log.info("worker registered", extra=worker.observer.extra(handlers=worker.handler_names))
        if worker.heartbeat_interval is not None:
            return worker.heartbeat_interval
        return record.heartbeat_interval_ms / 1000
    return None


async def heartbeat_loop(worker: Worker, interval: float) -> None:
    """One worker heartbeat per interval listing every held task (P-SDK-4, P-WORKER-2/3).

    Fixed-rate: the time a heartbeat takes does not push the next one back.
    """
    assert worker.client is not None
    loop = asyncio.get_running_loop()
    due = loop.time() + interval
    while True:
        await asyncio.sleep(max(0.0, due - loop.time()))
        due = max(due + interval, loop.time())
        try:
            interval = await _heartbeat_once(worker, interval)
        except Orch8Error as exc:
            log.warning("worker heartbeat failed", extra=worker.observer.extra(error=str(exc)))
        except Exception:  # a bug here must not silently end the heartbeats
            log.exception("worker heartbeat crashed", extra=worker.observer.extra())


async def _heartbeat_once(worker: Worker, interval: float) -> float:
    """Send one heartbeat, apply its answer, and return the interval to keep."""
    assert worker.client is not None
    slots = dict(worker.held)
    answer = await worker.client.heartbeat_worker(
        worker.worker_id, active_task_ids=list(slots), state=worker.state
    )
    for status in answer.tasks:
        slot = slots.get(status.task_id)
        if slot is None:
            continue
        if status.lease_lost:  # P-WORKER-2: stop, report nothing
            slot.cancel("lease_lost")
        elif status.cancel_requested:  # P-CANCEL-1
            slot.cancel("cancelled")
        elif isinstance(status.lease_expires_at, datetime.datetime):
            slot.ctx._update_lease(status.lease_expires_at)
    apply_directive(worker, answer.directive)
    if worker.heartbeat_interval is None and answer.heartbeat_interval_ms > 0:
        return answer.heartbeat_interval_ms / 1000
    return interval


def apply_directive(worker: Worker, directive: str) -> None:
    """P-WORKER-3: obey `running`, `quiet` and `terminate`."""
    if directive == "terminate":
        worker.request_stop("terminate directive")
        return
    quiet = directive == "quiet"
    if quiet != worker.server_quiet:
        worker.server_quiet = quiet
        if quiet:
            worker.interrupt_poll()
        log.info("directive " + directive, extra=worker.observer.extra(directive=directive))
        worker.poke()


async def poll_loop(worker: Worker) -> None:
    """Long-poll for exactly the free slots (P-SDK-3) until shutdown; back off on outages."""
    assert worker.client is not None and worker.stopping is not None and worker.wake is not None
    backoff = worker.new_backoff()
    while not worker.stopping.is_set():
        free = worker.concurrency - len(worker.held) - len(worker.superseded)
        if free <= 0 or not worker.claiming:
            worker.wake.clear()
            await worker.wake.wait()
            continue
        worker.interrupt.clear()
        poll = asyncio.ensure_future(
            worker.client.poll_tasks(
                handler_names=list(worker.handler_names),
                queue_name=worker.queue_name,
                worker_id=worker.worker_id,
                wait_ms=worker.wait_ms,
                lease_ms=worker.lease_ms,
                batch_size=free,
            )
        )
        interrupted = asyncio.ensure_future(worker.interrupt.wait())
        await asyncio.wait({poll, interrupted}, return_when=asyncio.FIRST_COMPLETED)
        interrupted.cancel()
        if not poll.done():
            # P-SDK-7 / P-SDK-8: shutdown or quiet aborts the in-flight long-poll at once; the
            # server claims nothing for a poll whose caller went away.
            poll.cancel()
            await asyncio.gather(poll, return_exceptions=True)
            continue
        try:
            batch = poll.result()
        except Orch8Error as exc:
            worker.observer.count("poll_errors")
            delay = backoff.next_delay()
            log.warning(
                "poll failed, backing off",
                extra=worker.observer.extra(error=str(exc), retry_in_s=round(delay, 3)),
            )
            await _sleep_unless_stopping(worker, delay)  # P-SDK-9
            continue
        backoff.reset()
        worker.observer.polled(len(batch.tasks))
        for claimed in batch.tasks:
            worker.start_task(claimed)
        if batch.next_poll_after_ms:
            await _sleep_unless_stopping(worker, batch.next_poll_after_ms / 1000)


async def run_slot(worker: Worker, slot: Slot) -> None:
    """Run one attempt and report it, unless its lease was lost meanwhile (P-SDK-5/6)."""
    assert worker.client is not None and worker.executor is not None
    ctx = slot.ctx
    try:
        worker.observer.started(ctx)
        outcome = await run_handler(slot, worker.executor)
        if slot.abandoned:
            return  # shutdown already reported this attempt
        if ctx.is_cancelled:
            worker.observer.lost(ctx, ctx.cancel_reason or "lease_lost")
            return
        if outcome.ok and worker.completer is not None:  # P-SDK-12: batched completions
            delivered = await worker.completer.complete(slot, outcome)
        else:  # fails stay single calls
            delivered = await deliver(
                worker.client, slot, outcome, worker.observer, worker.new_backoff
            )
        if delivered:
            if outcome.ok:
                worker.observer.completed(ctx, outcome.output)
            else:
                assert outcome.error is not None
                worker.observer.failed(ctx, outcome.error, outcome.code, outcome.retryable)
        elif ctx.is_cancelled:
            worker.observer.lost(ctx, ctx.cancel_reason or "lease_lost")
    except asyncio.CancelledError:
        raise
    except Exception:  # never let one task's bug escape as an unretrieved task exception
        log.exception("task runner crashed", extra=worker.observer.extra(ctx))
    finally:
        worker.release_slot(slot)


class ShutdownError(Exception):
    """What a handler still running when the grace period ended is failed with (P-SDK-7)."""


async def drain(worker: Worker) -> None:
    """Wait up to grace_period for in-flight tasks, then fail leftovers with `shutdown`."""
    assert worker.client is not None
    slots = [*worker.held.values(), *worker.superseded]
    runners = {s.runner for s in slots if s.runner is not None}
    if not runners:
        return
    log.info(
        "draining in-flight tasks",
        extra=worker.observer.extra(in_flight=len(runners), grace_period_s=worker.grace_period),
    )
    _, pending = await asyncio.wait(runners, timeout=worker.grace_period)
    leftovers = [s for s in slots if s.runner in pending]
    for slot in leftovers:
        slot.abandoned = True
        slot.cancel(SHUTDOWN)  # the handler's cancellation signal fires first
    error = ShutdownError(f"worker shut down after a {worker.grace_period:g} s grace period")
    results = await asyncio.gather(
        *(report(worker.client, s.ctx, Outcome(error=error, code=SHUTDOWN)) for s in leftovers),
        return_exceptions=True,
    )
    for slot, result in zip(leftovers, results, strict=True):
        if isinstance(result, BaseException):
            log.warning(
                "shutdown failure not delivered",
                extra=worker.observer.extra(slot.ctx, error=str(result)),
            )
        else:
            worker.observer.failed(slot.ctx, error, SHUTDOWN, True)
        slot.abort()
        if slot.runner is not None:
            slot.runner.cancel()  # sync handlers keep their thread; their result is dropped
    await asyncio.gather(*(s.runner for s in leftovers if s.runner), return_exceptions=True)
