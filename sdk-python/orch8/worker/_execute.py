"""Running one claimed attempt and delivering its result (P-SDK-5, P-SDK-6, P-SDK-9, P-SDK-12)."""

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


MAX_BATCH = 100  # items per POST /workers/tasks/complete/batch (P-SDK-12, openapi maxItems)


@dataclass(eq=False)
class _Pending:
    """One completion waiting for (or riding in) a batch request."""

    slot: Slot
    outcome: Outcome
    done: asyncio.Future[bool | None]  # True taken, False not sent / lost, None: single path

    def settle(self, value: bool | None) -> None:
        if not self.done.done():
            self.done.set_result(value)


class Completer:
    """Group-commit completions through POST /workers/tasks/complete/batch (P-SDK-12).

    A result that becomes ready while no batch request is in flight is sent at once, alone;
    results that become ready while one is in flight wait for it and then go together in
    the next request (at most MAX_BATCH). No timer. Each item's answer is handled as a single
    complete's would be; a transport failure, 429 or 5xx re-sends the items with the outage
    backoff (P-SDK-9) until each one's lease deadline. Anything the batch cannot decide for
    one item (a rejected body, an output that is not JSON, any other item error) goes
    through the single-call `deliver`, so it ends exactly as a single complete would.
    """

    def __init__(
        self,
        client: AsyncOrch8Client,
        observer: Observer,
        backoff_factory: Callable[[], Backoff],
    ) -> None:
        self.client = client
        self.observer = observer
        self.backoff_factory = backoff_factory
        self._queue: list[_Pending] = []
        self._sender: asyncio.Task[None] | None = None

    @property
    def in_flight(self) -> bool:
        return self._sender is not None and not self._sender.done()

    async def complete(self, slot: Slot, outcome: Outcome) -> bool:
        """Report a successful outcome; True when the server took it (as `deliver`)."""
        if slot.ctx.is_cancelled:
            return False
        entry = _Pending(slot, outcome, asyncio.get_running_loop().create_future())
        self._queue.append(entry)
        if not self.in_flight:
            first = self._take()  # taken now: the request holds this result alone
            self._sender = asyncio.ensure_future(self._send_loop(first))
        verdict = await asyncio.shield(entry.done)
        if verdict is None:  # not decided by the batch: the single-call path decides
            return await deliver(self.client, slot, outcome, self.observer, self.backoff_factory)
        return verdict

    async def aclose(self) -> None:
        """Wait for the batch request in flight, if any (P-SDK-7: before deregistering)."""
        if self._sender is not None:
            await asyncio.gather(self._sender, return_exceptions=True)

    def _take(self) -> list[_Pending]:
        """Up to MAX_BATCH queued results still worth sending, oldest first."""
        batch: list[_Pending] = []
        while self._queue and len(batch) < MAX_BATCH:
            entry = self._queue.pop(0)
            if entry.done.done():
                continue
            if entry.slot.ctx.is_cancelled:  # lease lost or cancelled meanwhile: send nothing
                entry.settle(False)
                continue
            batch.append(entry)
        return batch

    async def _send_loop(self, batch: list[_Pending]) -> None:
        backoff = self.backoff_factory()
        try:
            while True:
                if batch:
                    retry = await self._send(batch)
                    if retry:
                        delay = backoff.next_delay()
                        for entry in retry:
                            log.warning(
                                "result delivery failed, retrying",
                                extra=self.observer.extra(
                                    entry.slot.ctx, retry_in_s=round(delay, 3)
                                ),
                            )
                        await asyncio.sleep(delay)
                        self._queue[:0] = retry  # the same items go first in the re-send
                    else:
                        backoff.reset()
                batch = self._take()
                if not batch and not self._queue:
                    return
        except BaseException:
            for entry in [*batch, *self._queue]:
                entry.settle(None)  # never strand a waiting runner
            self._queue.clear()
            raise

    async def _send(self, batch: list[_Pending]) -> list[_Pending]:
        """Send one batch and settle its items; returns the items to re-send."""
        items = [
            {"task_id": e.slot.ctx.id, "lease_id": e.slot.ctx.lease_id, "output": e.outcome.output}
            for e in batch
        ]
        try:
            answer = await self.client.complete_tasks(items)
        except Orch8Error as exc:
            if not _transient(exc):
                for entry in batch:  # e.g. a body over the limit: decide item by item
                    entry.settle(None)
                return []
            return self._keep_for_resend(batch, str(exc))
        except (TypeError, ValueError):  # an output that is not JSON-serialisable
            for entry in batch:
                entry.settle(None)
            return []
        retry: list[_Pending] = []
        by_id = {o.task_id: o for o in answer.items}
        for entry in batch:
            got = by_id.get(entry.slot.ctx.id)
            if got is None:
                entry.settle(None)
            elif got.status != "error":
                entry.settle(True)
            else:
                retry.extend(self._item_error(entry, got.problem))
        return self._keep_for_resend(retry, "item not applied") if retry else []

    def _item_error(self, entry: _Pending, problem: Any) -> list[_Pending]:
        """An `error` item, handled as the same problem on a single complete would be."""
        code = getattr(problem, "code", None)
        status = getattr(problem, "status", None)
        if code == "lease_lost":
            entry.slot.cancel("lease_lost")
            entry.settle(False)
        elif code == "task_cancelled":
            entry.slot.cancel("cancelled")
            entry.settle(False)
        elif isinstance(status, int) and (status in (408, 429) or status >= 500):
            return [entry]
        else:
            entry.settle(None)
        return []

    def _keep_for_resend(self, batch: list[_Pending], error: str) -> list[_Pending]:
        keep: list[_Pending] = []
        for entry in batch:
            ctx = entry.slot.ctx
            if entry.done.done():
                continue
            if ctx.is_cancelled:
                entry.settle(False)
            elif _lease_deadline_passed(ctx):
                log.error(
                    "result undeliverable before the lease deadline",
                    extra=self.observer.extra(ctx, error=error),
                )
                entry.settle(False)
            else:
                keep.append(entry)
        return keep
