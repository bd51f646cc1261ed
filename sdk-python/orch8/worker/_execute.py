"""Running one claimed attempt and delivering its result (P-SDK-5, P-SDK-6, P-SDK-9)."""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import functools
import inspect
import traceback
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from ..async_client import AsyncOrch8Client
from ..errors import (
    LeaseLostError,
    Orch8Error,
    PermanentError,
    RetryableError,
    TaskCancelledError,
)
from .backoff import Backoff
from .context import TaskContext
from .observe import Observer, log

Handler = Callable[[TaskContext], Any | Awaitable[Any]]

UNHANDLED = "unhandled_error"  # P-SDK-6
SHUTDOWN = "shutdown"  # P-SDK-7


@dataclass
class Outcome:
    """How an attempt ended, before it is reported."""

    output: Any = None
    error: BaseException | None = None
    retryable: bool = True
    code: str = UNHANDLED
    retry_after_ms: int | None = None
    details: dict[str, Any] | None = None
    checkpoint: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def classify(exc: BaseException) -> Outcome:
    """P-SDK-6: RetryableError, PermanentError, anything else retryable `unhandled_error`."""
    if isinstance(exc, RetryableError):
        after = None if exc.retry_after is None else max(0, round(exc.retry_after * 1000))
        return Outcome(
            error=exc,
            retryable=True,
            code=exc.code,
            retry_after_ms=after,
            details=exc.details,
            checkpoint=exc.checkpoint,
        )
    if isinstance(exc, PermanentError):
        return Outcome(error=exc, retryable=False, code=exc.code, details=exc.details)
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    details = {"exception": type(exc).__name__, "traceback": trace[-8000:]}
    return Outcome(error=exc, retryable=True, code=UNHANDLED, details=details)


@dataclass(eq=False)  # identity semantics: slots live in sets
class Slot:
    """One held task: its context, handler and the asyncio work running it."""

    ctx: TaskContext
    handler: Handler
    runner: asyncio.Task[None] | None = None
    handler_future: asyncio.Future[Any] | None = None
    abandoned: bool = False  # shutdown already reported this attempt (P-SDK-7)

    def cancel(self, reason: str) -> bool:
        """Fire the handler's cancellation signal (P-SDK-5); the handler decides how to stop."""
        return self.ctx._cancel(reason)

    def abort(self) -> None:
        """After the grace period an async handler is cancelled outright (P-SDK-7).

        A sync handler's thread cannot be interrupted; its late result is dropped.
        """
        future = self.handler_future
        if future is not None and is_async(self.handler) and not future.done():
            future.cancel()


def is_async(handler: Handler) -> bool:
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
        getattr(handler, "__call__", None)  # noqa: B004 - callable objects with async __call__
    )


def start_handler(slot: Slot, executor: Executor) -> asyncio.Future[Any]:
    """Async handlers run on the loop, sync ones in the thread pool (with contextvars)."""
    loop = asyncio.get_running_loop()
    if is_async(slot.handler):
        return asyncio.ensure_future(slot.handler(slot.ctx))
    call = functools.partial(contextvars.copy_context().run, slot.handler, slot.ctx)
    return loop.run_in_executor(executor, call)


async def run_handler(slot: Slot, executor: Executor) -> Outcome:
    """Run the handler to its end and classify what happened."""
    try:
        future = start_handler(slot, executor)
    except Exception as exc:  # e.g. the handler is not callable with one argument
        return classify(exc)
    slot.handler_future = future
    await asyncio.wait({future})
    if future.cancelled():
        return Outcome(error=asyncio.CancelledError(), retryable=True, code=SHUTDOWN)
    failure = future.exception()
    if failure is not None:
        return classify(failure)
    result = future.result()
    if inspect.isawaitable(result):  # a sync callable that returned a coroutine
        try:
            result = await result
        except Exception as exc:
            return classify(exc)
    return Outcome(output=result)


def _lease_deadline_passed(ctx: TaskContext) -> bool:
    return datetime.datetime.now(datetime.timezone.utc) >= ctx.lease_expires_at


async def report(client: AsyncOrch8Client, ctx: TaskContext, outcome: Outcome) -> None:
    """One attempt to report; the client itself retries transient failures (P-SDK-2)."""
    if outcome.ok:
        await client.complete_task(ctx.id, output=outcome.output, lease_id=ctx.lease_id)
        return
    message = str(outcome.error) or type(outcome.error).__name__
    await client.fail_task(
        ctx.id,
        error=message[:65536],
        retryable=outcome.retryable,
        code=outcome.code,
        retry_after_ms=outcome.retry_after_ms,
        details=outcome.details,
        checkpoint=outcome.checkpoint,
        lease_id=ctx.lease_id,
    )


def _transient(exc: Orch8Error) -> bool:
    return exc.status is None or exc.status in (408, 429) or exc.status >= 500


async def deliver(
    client: AsyncOrch8Client,
    slot: Slot,
    outcome: Outcome,
    observer: Observer,
    backoff_factory: Callable[[], Backoff],
) -> bool:
    """Report `outcome`, re-sending through outages until the lease deadline (P-SDK-9).

    Returns True when the server took the result. A 409 lease_lost / task_cancelled fires the
    cancellation signal and stops (P-SDK-5); the caller then counts the task as lost.
    """
    ctx = slot.ctx
    backoff = backoff_factory()
    while True:
        if ctx.is_cancelled:
            return False
        try:
            await report(client, ctx, outcome)
            return True
        except LeaseLostError:
            slot.cancel("lease_lost")
            return False
        except TaskCancelledError:
            slot.cancel("cancelled")
            return False
        except Orch8Error as exc:
            if not _transient(exc):
                log.error(
                    "result rejected by the server",
                    extra=observer.extra(ctx, error=str(exc), code=exc.code),
                )
                if outcome.ok:
                    # e.g. an output over the body limit: report it as a permanent failure.
                    outcome = Outcome(error=exc, retryable=False, code=exc.code or "rejected")
                    continue
                return False
            if _lease_deadline_passed(ctx):
                log.error(
                    "result undeliverable before the lease deadline", extra=observer.extra(ctx)
                )
                return False
            delay = backoff.next_delay()
            log.warning(
                "result delivery failed, retrying",
                extra=observer.extra(ctx, error=str(exc), retry_in_s=round(delay, 3)),
            )
            await asyncio.sleep(delay)
        except (TypeError, ValueError) as exc:  # output not JSON-serialisable
            if not outcome.ok:
                return False
            outcome = classify(exc)
