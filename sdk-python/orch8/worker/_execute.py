"""Running one claimed attempt and delivering a failure (P-SDK-5, -6, -9, -15, -20)."""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import functools
import inspect
import json
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..async_client import AsyncOrch8Client
from ..errors import (
    LeaseLostError,
    Orch8Error,
    PermanentError,
    RetryableError,
    TaskCancelledError,
    Yield,
    is_outage,
)
from ._logs import ERROR, cause_text
from ._release import Release, TaskExpired, of_yield, unless_expired
from ._report import Report, ReportRefused, bound_message
from .backoff import Backoff
from .context import TaskContext
from .observe import Observer

if TYPE_CHECKING:
    from ..telemetry import TaskTelemetry

Handler = Callable[[TaskContext], Any | Awaitable[Any]]

UNHANDLED = "unhandled_error"  # P-SDK-6, P-SDK-20
SHUTDOWN = "shutdown"  # P-SDK-7
NO_HANDLER = "no_handler"  # P-SDK-14
INVALID_OUTPUT = "invalid_output"  # P-SDK-15
OUTPUT_REJECTED = "output_rejected"  # P-SDK-15


_ALWAYS_JSON = (str, int, bool)  # exactly these types: subclasses go through json.dumps


@dataclass
class Outcome:
    """How an attempt ended, before it is reported."""

    output: Any = None
    error: BaseException | str | None = None
    retryable: bool = True
    code: str = UNHANDLED
    retry_after_ms: int | None = None
    details: dict[str, Any] | None = None
    checkpoint: dict[str, Any] | None = None
    release: Release | None = None  # P-SDK-32 / P-SDK-33: given back, not failed

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def message(self) -> str:
        """The fail's `error`, bounded to 16,384 bytes of UTF-8 (P-SDK-27)."""
        return bound_message(str(self.error) or type(self.error).__name__)

    def fail_body(self) -> dict[str, Any]:
        """The FailRequest fields of this outcome (its lease id aside)."""
        return {
            "error": self.message,
            "retryable": self.retryable,
            "code": self.code,
            "retry_after_ms": self.retry_after_ms,
            "details": self.details,
            "checkpoint": self.checkpoint,
        }


def classify(exc: BaseException) -> Outcome:
    """P-SDK-6 / P-SDK-20: typed errors as they say, anything else retryable unhandled_error.

    A yield (P-SDK-32) and an expiry before the start (P-SDK-33) are releases, not failures.
    """
    if isinstance(exc, Yield):
        return Outcome(error=exc, release=of_yield(exc))
    if isinstance(exc, TaskExpired):
        return Outcome(error=exc, release=Release("expired", good_until=exc.good_until))
    if isinstance(exc, RetryableError):
        return Outcome(
            error=exc,
            retryable=True,
            code=exc.code,
            retry_after_ms=None if exc.retry_after_ms is None else max(0, exc.retry_after_ms),
            details=exc.details,
            checkpoint=exc.checkpoint,
        )
    if isinstance(exc, PermanentError):
        return Outcome(
            error=exc,
            retryable=False,
            code=exc.code,
            details=exc.details,
            checkpoint=exc.checkpoint,
        )
    stack = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    details = {"type": type(exc).__name__, "message": str(exc), "stack": stack[-8000:]}
    return Outcome(error=exc, retryable=True, code=UNHANDLED, details=details)


def strict_json(output: Any) -> Outcome | None:
    """P-SDK-15: None when `output` is RFC 8259 JSON, else the permanent invalid_output fail."""
    if output is None or type(output) in _ALWAYS_JSON:
        return None
    try:
        json.dumps(output, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        return Outcome(
            error=f"handler output is not JSON: {type(exc).__name__}: {exc}",
            retryable=False,
            code=INVALID_OUTPUT,
            details={"type": type(exc).__name__, "message": str(exc)},
        )
    return None


def output_rejected(status: int | None, code: str | None) -> Outcome:
    """P-SDK-15: the permanent fail of an output the server refused on its own.

    It carries no output, so it fits.
    """
    return Outcome(
        error=f"the server refused the completion ({status} {code})",
        retryable=False,
        code=OUTPUT_REJECTED,
        details={"status": status, "code": code},
    )


@dataclass(eq=False)  # identity semantics: slots live in sets
class Slot:
    """One held task: its context, handler and the asyncio work running it."""

    ctx: TaskContext
    handler: Handler
    runner: asyncio.Task[None] | None = None
    # What `abort` cancels while the handler runs: its thread's future, or the task it runs in.
    handler_future: asyncio.Future[Any] | None = None
    aborted: bool = False  # `abort` cancelled an async handler (P-SDK-7)
    abandoned: bool = False  # shutdown already reported this attempt (P-SDK-7)
    delivering: bool = False  # the handler ended and its result is on its way
    delivery_stopped: bool = False  # the shutdown gave its result up (P-SDK-29)
    handed: bool = False  # P-SDK-3: its completion is with the completer, its slot free
    started: float = 0.0
    duration_ms: float = 0.0
    good_until: datetime.datetime | None = None  # P-SDK-33: checked again right before the start
    # P-SDK-30: the lease's length when its poll answer arrived (expires_at minus that
    # moment, >= 0) and the loop time of the claim; the heartbeat loop paces itself by them.
    lease_ms: float | None = None
    claimed_at: float = 0.0

    def cancel(self, reason: str) -> bool:
        """Fire the handler's cancellation signal (P-SDK-5); the handler decides how to stop."""
        return self.ctx._cancel(reason)

    def abort(self) -> None:
        """After the grace period an async handler is cancelled outright (P-SDK-7).

        A sync handler's thread cannot be interrupted; its late result is dropped.
        """
        future = self.handler_future
        if future is not None and is_async(self.handler) and not future.done():
            self.aborted = True
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
    call = functools.partial(
        contextvars.copy_context().run, unless_expired, slot.handler, slot.ctx, slot.good_until
    )
    return loop.run_in_executor(executor, call)


async def run_handler(slot: Slot, executor: Executor) -> Outcome:
    """Run the handler to its end and classify what happened; the output is checked JSON."""
    slot.started = time.monotonic()
    try:
        outcome = await _run_handler(slot, executor)
    finally:
        slot.duration_ms = (time.monotonic() - slot.started) * 1000
    if outcome.ok:
        return strict_json(outcome.output) or outcome
    return outcome


def elapsed_ms(slot: Slot) -> float | None:
    """The handler's run time: final once it ended, so far while it runs, None before."""
    if not slot.started:
        return None
    return slot.duration_ms or (time.monotonic() - slot.started) * 1000


# Python 3.11+ tells a cancellation of the running task (Task.cancelling) from a handler
# raising CancelledError itself; 3.10 cannot, so there an async handler keeps a task of its own.
_INLINE = sys.version_info >= (3, 11)


def _cancelling(task: asyncio.Task[Any]) -> int:
    if sys.version_info >= (3, 11):
        return task.cancelling()
    return 1  # unused: 3.10 runs no handler inline


def _uncancel(task: asyncio.Task[Any]) -> None:
    if sys.version_info >= (3, 11):
        task.uncancel()


async def _run_handler(slot: Slot, executor: Executor) -> Outcome:
    telemetry = slot.ctx._telemetry
    if _INLINE and is_async(slot.handler):
        return await _run_inline(slot, telemetry)
    try:
        if telemetry is None:
            future = start_handler(slot, executor)
        else:
            # P-TEL-3: the process span is current for the handler; the asyncio task or the
            # copied contextvars of the thread take it with them.
            with telemetry.current():
                future = start_handler(slot, executor)
    except Exception as exc:  # e.g. the handler is not callable with one argument
        return classify(exc)
    slot.handler_future = future
    if not future.done():
        # Waits for the handler without taking it along: cancelling this coroutine leaves
        # the handler running (its abort is Slot.abort's); cheaper than asyncio.wait.
        ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.add_done_callback(functools.partial(_end, ended))
        await ended
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


async def _run_inline(slot: Slot, telemetry: TaskTelemetry | None) -> Outcome:
    """An async handler awaited in the task of its slot's runner, not a task of its own (two
    tasks and a future per claimed task were a tenth of the worker's CPU, issue 30).

    `abort` cancels that task while the handler runs, which ends like a cancelled handler
    task did: a `shutdown` outcome. So does a CancelledError the handler raises itself; a
    cancellation of the runner from elsewhere (the loop's teardown) goes on up.
    """
    task = asyncio.current_task()
    assert task is not None
    slot.handler_future = task
    try:
        if telemetry is None:
            result = await slot.handler(slot.ctx)
        else:
            with telemetry.current():  # P-TEL-3: the process span is current for the handler
                result = await slot.handler(slot.ctx)
    except asyncio.CancelledError:
        if not slot.aborted and _cancelling(task):
            raise
        return Outcome(error=asyncio.CancelledError(), retryable=True, code=SHUTDOWN)
    except (KeyboardInterrupt, SystemExit):
        raise  # as a task re-raises them: they stop the loop
    except BaseException as exc:  # what a handler task's exception() gave, as classify takes
        return classify(exc)
    finally:
        slot.handler_future = None
        if slot.aborted:
            _uncancel(task)  # the abort's cancellation ends here, not in whoever awaits us
    return Outcome(output=result)


def _end(ended: asyncio.Future[None], _: object) -> None:
    if not ended.done():
        ended.set_result(None)


def lease_deadline_passed(ctx: TaskContext) -> bool:
    return datetime.datetime.now(datetime.timezone.utc) >= ctx.lease_expires_at


def report(observer: Observer, ctx: TaskContext, outcome: Outcome) -> Report:
    """The bounded failure report of `outcome` (P-SDK-27), every code alike."""
    return Report(ctx, outcome.fail_body(), observer)


async def send_fail(client: AsyncOrch8Client, ctx: TaskContext, sent: Report) -> None:
    """One fail call (the client itself retries outages, P-SDK-2); a refusal is re-sent once."""

    async def fail(body: dict[str, Any]) -> object:
        return await client.fail_task(ctx.id, lease_id=ctx.lease_id, **body)

    await sent.send(fail)


class DeliverDeps(Protocol):
    """What delivering a failure needs from the worker's runtime."""

    client: AsyncOrch8Client
    observer: Observer

    def new_backoff(self) -> Backoff: ...


async def deliver_fail(deps: DeliverDeps, slot: Slot, outcome: Outcome) -> str:
    """Report a failure, re-sending through outages until the lease deadline (P-SDK-9).

    Returns how the task ended: `failed` (the server took it), `lease_lost` or `cancelled`
    (a 409 fired the cancellation signal, P-SDK-5, or the deadline passed, or the report
    was refused twice, P-SDK-27).
    """
    ctx = slot.ctx
    backoff = deps.new_backoff()
    sent = report(deps.observer, ctx, outcome)
    while True:
        if ctx.is_cancelled:
            return ctx.cancel_reason or "lease_lost"
        try:
            await send_fail(deps.client, ctx, sent)
            return "failed"
        except LeaseLostError:
            slot.cancel("lease_lost")
            return "lease_lost"
        except TaskCancelledError:
            slot.cancel("cancelled")
            return "cancelled"
        except ReportRefused as exc:  # P-SDK-27: only a second refusal gives the task up
            deps.observer.error("fail", exc.second)
            cause = f"{cause_text(exc.first)}; then {cause_text(exc.second)}"
            _given_up(deps.observer, ctx, "failure report refused twice", cause)
            return "given_up"
        except Orch8Error as exc:
            deps.observer.error("fail", exc)
            if not is_outage(exc):
                _given_up(deps.observer, ctx, "failure report refused", cause_text(exc))
                return "given_up"  # it runs again once its lease expires
            if lease_deadline_passed(ctx):
                message = "failure report still undeliverable at the lease deadline"
                _given_up(deps.observer, ctx, message, cause_text(exc))
                return "given_up"
            delay = backoff.next_delay_ms(exc.retry_after_ms)
            deps.observer.call_failed(
                "fail", exc, "failure report", f"retrying in {delay:.0f} ms", ctx, delay
            )
            await asyncio.sleep(delay / 1000)


def _given_up(observer: Observer, ctx: TaskContext, why: str, cause: str) -> None:
    """P-SDK-31 `given_up`: a failure the worker could not deliver; counted as lease lost."""
    message = f"{why}; task given up as lease lost"
    observer.line(ERROR, "given_up", message, ctx, cause, operation="fail")
