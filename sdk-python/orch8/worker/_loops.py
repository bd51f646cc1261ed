"""The worker's concurrent loops: registration, heartbeats, claiming, running, draining.

Each loop takes a narrow Protocol of what it needs; `_runtime.Runtime` provides them all.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import socket
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from typing import Any, Protocol

from .._version import USER_AGENT
from ..async_client import AsyncOrch8Client
from ..errors import Orch8Error, is_outage, refusal
from ..models import ClaimedTask
from ..telemetry import WorkerTelemetry
from . import _wire
from ._completer import Completer
from ._execute import (
    Outcome,
    Slot,
    deliver_fail,
    elapsed_ms,
    output_rejected,
    run_handler,
)
from ._logs import ERROR, INFO, WARNING, answer_fields, cause_text
from ._release import EXPIRED, Release, deliver_release, expired
from ._runtime import Settings, lease_heartbeat_ms
from ._waits import wait_event
from .backoff import Backoff
from .observe import Observer

# P-SDK-17: after the grace period the worker returns within 5 s: 2 s for the shutdown
# fails (_drain.py), 1.5 s for completions still in flight, 1.5 s to deregister.
SHUTDOWN_STEP_S = 1.5

# P-SDK-14, P-SDK-15: codes of the fails the worker decides on its own (P-SDK-31 `task_rejected`).
REJECTED_BY_WORKER = ("no_handler", "invalid_output", "output_rejected")


async def _sleep_unless(event: asyncio.Event, ms: float) -> None:
    await wait_event(event, max(0.0, ms / 1000))


class RegisterDeps(Protocol):
    client: AsyncOrch8Client
    observer: Observer
    settings: Settings
    stopping: asyncio.Event
    last_heartbeat_at: float | None

    @property
    def handler_names(self) -> list[str]: ...

    def new_backoff(self) -> Backoff: ...


async def register_until_ok(deps: RegisterDeps) -> int | None:
    """Register (P-WORKER-1, P-SDK-21), riding out outages (P-SDK-9); the heartbeat interval.

    None means shutdown was requested before the server could be reached.
    """
    cfg = deps.settings
    backoff = deps.new_backoff()
    while not deps.stopping.is_set():
        try:
            record = await deps.client.register_worker(
                cfg.worker_id,
                hostname=socket.gethostname()[:255],
                pid=os.getpid(),
                handlers=deps.handler_names,
                queues=cfg.queues.registered,  # P-SDK-21, P-SDK-23: the list itself
                concurrency=cfg.concurrency,
                labels=cfg.labels,
                sdk=USER_AGENT,
            )
        except Orch8Error as exc:
            deps.observer.error("register", exc)
            # P-SDK-24: a refused key (401/403) is not fatal: it may be fixed on the server.
            if refusal(exc) is None and not is_outage(exc):
                url = deps.client.config.base_url
                deps.observer.line(
                    ERROR,
                    "config_error",
                    f"registration at {url} refused for good; the worker stops",
                    None,
                    cause_text(exc),
                    url=url,
                    **answer_fields(exc),
                )
                raise configuration_error(url, exc) from exc
            delay = backoff.next_delay_ms(exc.retry_after_ms)
            deps.observer.call_failed(
                "register",
                exc,
                "registration",
                f"retrying in {delay:.0f} ms",
                retry_in_ms=delay,
            )
            await _sleep_unless(deps.stopping, delay)
            continue
        deps.last_heartbeat_at = time.time()  # P-TEL-5: registration counts as a heartbeat
        interval_ms = cfg.heartbeat_interval_ms or record.heartbeat_interval_ms or 5000
        deps.observer.line(
            INFO,
            "registered",
            "worker registered",
            url=deps.client.config.base_url,
            heartbeat_interval_ms=interval_ms,
        )
        return interval_ms
    return None


def configuration_error(base_url: str, exc: Orch8Error) -> Orch8Error:
    """P-SDK-28: a registration answer that retrying cannot fix (404, 405, 501, 422, ...).

    Not retried: the URL most likely names something that is not an Orch8 server, so run()
    ends at once with the URL, the HTTP status and the problem code (`http_<status>` when
    the answer is not a problem).
    """
    code = exc.code or f"http_{exc.status}"
    return type(exc)(  # the mapped class stays (a 422 is still a ValidationError)
        # str() appends "(<status> <code>)" to this (Orch8Error.__str__).
        f"worker registration at {base_url} failed, not retried: {exc.detail};"
        " is ORCH8_URL (base_url) the address of an Orch8 server?",
        status=exc.status,
        code=code,
        problem=exc.problem,
    )


class HeartbeatDeps(Protocol):
    client: AsyncOrch8Client
    observer: Observer
    settings: Settings
    held: dict[str, Slot]
    telemetry: WorkerTelemetry | None
    last_heartbeat_at: float | None
    heartbeat_interval_ms: int
    heartbeat_due: float
    heartbeat_wake: asyncio.Event

    @property
    def state(self) -> str: ...

    def apply_directive(self, directive: str) -> None: ...


def next_heartbeat_at(last: float, interval_ms: int, held: Iterable[Slot]) -> float:
    """P-SDK-30: the loop time of the next worker heartbeat, from the tasks held now.

    `last` is when the previous one was due. Every held task needs one within a third of its
    lease (never more often than every 100 ms) of the later of `last` and its claim; the
    server's interval applies when no task needs it sooner, and again once it is done.
    """
    due = last + interval_ms / 1000
    for slot in held:
        if slot.lease_ms is not None:
            since = max(last, slot.claimed_at)
            due = min(due, since + lease_heartbeat_ms(interval_ms, slot.lease_ms) / 1000)
    return due


def heartbeat_period_ms(interval_ms: int, held: Iterable[Slot]) -> float:
    """P-SDK-30: min(interval, L / 3) for the shortest lease L held now, floored at 100 ms."""
    periods = (lease_heartbeat_ms(interval_ms, s.lease_ms) for s in held if s.lease_ms is not None)
    return min(periods, default=interval_ms)


async def heartbeat_loop(deps: HeartbeatDeps, interval_ms: int) -> None:
    """One worker heartbeat per interval listing every held task (P-SDK-4, P-WORKER-2/3).

    Fixed-rate: the time a heartbeat takes does not push the next one back. P-SDK-30: the
    interval is min(server interval, L / 3, floored at 100 ms) for the shortest lease L
    held now; a claim that needs a heartbeat sooner than the one planned wakes the loop.
    A worker's own `heartbeat_interval_ms` is kept as given (it can turn heartbeats off),
    as in sdk-typescript and sdk-go.
    """
    loop = asyncio.get_running_loop()
    last = loop.time()
    fitted = deps.settings.heartbeat_interval_ms is None
    while True:
        deps.heartbeat_interval_ms = interval_ms  # P-TEL-5: health measures age against it
        deps.heartbeat_wake.clear()
        held = list(deps.held.values()) if fitted else []
        due = next_heartbeat_at(last, interval_ms, held)
        deps.heartbeat_due = due
        now = loop.time()
        if now < due:
            # Woken by a claim (P-SDK-30) or at a deadline that a finished task had set:
            # either way the deadline is computed again from the tasks held then.
            await _sleep_unless(deps.heartbeat_wake, (due - now) * 1000)
            continue
        # Late (a slow heartbeat, a busy loop): one heartbeat now, no burst to catch up.
        last = max(due, now - heartbeat_period_ms(interval_ms, held) / 1000)
        try:
            interval_ms = await _heartbeat_once(deps, interval_ms)
            deps.last_heartbeat_at = time.time()  # P-TEL-5
            if deps.telemetry is not None:
                deps.telemetry.heartbeat(True)  # P-TEL-4
        except Orch8Error as exc:
            if deps.telemetry is not None:
                deps.telemetry.heartbeat(False)
            deps.observer.error("heartbeat", exc)
            deps.observer.call_failed("heartbeat", exc, "worker heartbeat")
        except Exception as exc:  # a bug here must not silently end the heartbeats
            deps.observer.error("heartbeat", exc)
            deps.observer.line(
                ERROR,
                "internal_error",
                "worker heartbeat crashed",
                None,
                cause_text(exc),
                exc,
                operation="heartbeat",
            )


async def _heartbeat_once(deps: HeartbeatDeps, interval_ms: int) -> int:
    """Send one heartbeat, apply its answer, and return the interval to keep."""
    slots = dict(deps.held)
    answer = await deps.client.heartbeat_worker(
        deps.settings.worker_id,
        active_task_ids=list(slots),
        state=deps.state,
        lease_ms=deps.settings.lease_ms,
    )
    for status in answer.tasks:
        slot = slots.get(status.task_id)
        if slot is None:
            continue
        if slot.delivering and (status.lease_lost or status.cancel_requested):
            # The result is on its way: our own completion or failure may be what ended the
            # lease, so the server's answer to the result decides (P-IDEM-1), not this
            # heartbeat (as in sdk-typescript and sdk-go).
            continue
        if status.lease_lost:  # P-WORKER-2: stop, report nothing
            slot.cancel("lease_lost")
        elif status.cancel_requested:  # P-CANCEL-1
            slot.cancel("cancelled")
        elif isinstance(status.lease_expires_at, datetime.datetime):
            slot.ctx._update_lease(status.lease_expires_at)
    deps.apply_directive(answer.directive)
    if deps.settings.heartbeat_interval_ms is None and answer.heartbeat_interval_ms > 0:
        return answer.heartbeat_interval_ms
    return interval_ms


class PollDeps(Protocol):
    client: AsyncOrch8Client
    observer: Observer
    settings: Settings
    stopping: asyncio.Event
    wake: asyncio.Event
    interrupt: asyncio.Event
    telemetry: WorkerTelemetry | None
    last_poll_at: float | None

    @property
    def claiming(self) -> bool: ...

    def free_slots(self) -> int: ...

    def gathering(self) -> bool: ...

    def batch_size(self) -> int: ...

    def handler_chunk(self) -> list[str]: ...

    def new_backoff(self) -> Backoff: ...

    def start_task(
        self,
        claimed: dict[str, Any],
        run: Callable[[Slot], Any],
        poll: object = None,
        model: ClaimedTask | None = None,
        received_at: float | None = None,
    ) -> None: ...


async def poll_loop(deps: PollDeps, run: Callable[[Slot], Any]) -> None:
    """Long-poll for the free slots (P-SDK-3, P-SDK-13) until shutdown; back off on outages."""
    cfg = deps.settings
    backoff = deps.new_backoff()
    while not deps.stopping.is_set():
        # P-SDK-26: while results are being reported, wait for their slots (poll threshold).
        if deps.free_slots() <= 0 or not deps.claiming or deps.gathering():
            deps.wake.clear()
            await deps.wake.wait()
            continue
        deps.interrupt.clear()
        started = time.monotonic()
        started_ns = time.time_ns()
        deps.observer.poll_sent()
        poll = asyncio.ensure_future(
            _wire.poll(
                deps.client,
                {
                    "handler_names": deps.handler_chunk(),
                    # P-SDK-23: queue_names / queue_weights unchanged in every poll (P-QUEUE-2/3).
                    "queue_name": cfg.queues.queue_name,
                    "queue_names": cfg.queues.queue_names,
                    "queue_weights": cfg.queues.queue_weights,
                    "worker_id": cfg.worker_id,
                    "wait_ms": cfg.wait_ms,
                    "lease_ms": cfg.lease_ms,
                    "batch_size": deps.batch_size(),
                },
            )
        )
        interrupted = asyncio.ensure_future(deps.interrupt.wait())
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
            if deps.telemetry is not None:
                deps.telemetry.polled(started_ns, None)  # P-TEL-4: orch8.outcome = error
            deps.observer.poll_failed(exc)
            delay = backoff.next_delay_ms(exc.retry_after_ms if is_outage(exc) else None)
            # P-SDK-24: 401/403 back off like an outage, logged as `refused`
            deps.observer.call_failed(
                "poll", exc, "poll", f"backing off {delay:.0f} ms", retry_in_ms=delay
            )
            await _sleep_unless(deps.stopping, delay)  # P-SDK-9
            continue
        backoff.reset()
        # P-TEL-5; P-SDK-30: each claimed lease is measured from the arrival of this answer.
        received_at = deps.last_poll_at = time.time()
        tasks: list[dict[str, Any]] = batch["tasks"]
        # P-TEL-3: a poll that claimed tasks gets its receive span, which each task links to.
        # Telemetry reads the typed models; without it the plain answer is enough (_wire).
        models = None if deps.telemetry is None else [ClaimedTask.from_dict(t) for t in tasks]
        link = None if deps.telemetry is None else deps.telemetry.polled(started_ns, models)
        deps.observer.polled(len(tasks), (time.monotonic() - started) * 1000)
        for i, claimed in enumerate(tasks):
            model = None if models is None else models[i]
            deps.start_task(claimed, run, link, model, received_at=received_at)
        if batch.get("next_poll_after_ms"):
            await _sleep_unless(deps.stopping, batch["next_poll_after_ms"])


class ExecutorDeps(Protocol):
    client: AsyncOrch8Client
    observer: Observer
    executor: Executor
    completer: Completer

    def new_backoff(self) -> Backoff: ...

    def hand_over(self, slot: Slot) -> None: ...

    def release_slot(self, slot: Slot) -> None: ...


async def run_slot(deps: ExecutorDeps, slot: Slot) -> None:
    """Run one attempt and report it, unless its lease was lost meanwhile (P-SDK-5/6)."""
    ctx = slot.ctx
    settled = False
    try:
        if expired(slot.good_until):  # P-SDK-33: it waited in the worker past its deadline
            outcome = Outcome(release=Release(EXPIRED, good_until=slot.good_until))
        else:
            deps.observer.started(ctx)
            outcome = await run_handler(slot, deps.executor)
        if slot.abandoned:
            settled = True
            return  # shutdown already reported and counted this attempt (P-SDK-7)
        ended = await _report(deps, slot, outcome)
        settled = True
        if ended in ("lease_lost", "cancelled"):
            deps.observer.abandoned(ctx, ended, duration_ms=elapsed_ms(slot))
        elif ended == "given_up":
            deps.observer.abandoned(ctx, "lease_lost", duration_ms=elapsed_ms(slot), logged=True)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # never let one task's bug escape as an unretrieved exception
        deps.observer.line(
            ERROR,
            "internal_error",
            "task runner crashed",
            ctx,
            cause_text(exc),
            exc,
            operation="run",
        )
    finally:
        if not settled and not slot.abandoned:
            if slot.delivery_stopped:  # the shutdown gave its result up (P-SDK-29, P-SDK-31)
                why = "result not delivered before the worker stopped"
                deps.observer.line(ERROR, "given_up", f"{why}; task given up as lease lost", ctx,
                                   "run() is returning")  # fmt: skip
                deps.observer.abandoned(ctx, "lease_lost", why, elapsed_ms(slot), logged=True)
            else:
                why = "runner ended without a result"
                deps.observer.abandoned(ctx, "lease_lost", why, elapsed_ms(slot))
        deps.release_slot(slot)


async def _report(deps: ExecutorDeps, slot: Slot, outcome: Outcome) -> str:
    """Deliver the outcome; how the task ended (completed, failed, lease_lost, cancelled)."""
    ctx = slot.ctx
    if ctx.is_cancelled:  # P-SDK-5 / P-SDK-19: no result once the signal fired
        return ctx.cancel_reason or "lease_lost"
    slot.delivering = True
    if outcome.release is not None:
        ended = await deliver_release(deps, ctx, outcome.release)
        if ended == "released":
            deps.observer.released(ctx, outcome.release, elapsed_ms(slot))
        return ended
    if outcome.ok:
        deps.hand_over(slot)  # P-SDK-3: the next poll need not wait for this answer
        verdict = await deps.completer.complete(slot, outcome.output)  # P-SDK-12
        if verdict.kind == "completed":
            deps.observer.completed(ctx, slot.duration_ms)
            return "completed"
        if verdict.kind != "rejected":
            return verdict.kind
        outcome = output_rejected(verdict.status, verdict.code)  # P-SDK-15: refused alone
    if outcome.code in REJECTED_BY_WORKER:
        deps.observer.line(
            WARNING,
            "task_rejected",
            f"task failed with {outcome.code}",
            ctx,
            outcome.message,
            code=outcome.code,
        )
    ended = await deliver_fail(deps, slot, outcome)
    if ended == "failed":
        deps.observer.failed(
            ctx, outcome.message, outcome.code, outcome.retryable, slot.duration_ms
        )
    return ended
