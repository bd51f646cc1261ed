"""Giving a claimed task back unfinished: a yield (P-SDK-32) or a task whose good_until
passed before its handler started (P-SDK-33). Both are a release: no attempt is spent."""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import LeaseLostError, Orch8Error, TaskCancelledError, Yield, is_outage
from ._logs import ERROR, cause_text
from .context import TaskContext

if TYPE_CHECKING:
    from ..async_client import AsyncOrch8Client
    from .backoff import Backoff
    from .observe import Observer

MAX_DELAY_MS = 86_400_000  # the contract's bound of TaskRelease.delay_ms

YIELD = "yield"
EXPIRED = "expired"


@dataclass(frozen=True)
class Release:
    """How a task goes back to its queue: why, with which checkpoint, after how long."""

    reason: str  # YIELD or EXPIRED
    checkpoint: dict[str, Any] | None = None
    delay_ms: int = 0
    good_until: datetime.datetime | None = None  # EXPIRED: the deadline that passed


class TaskExpired(Exception):
    """Raised instead of calling the handler when good_until passed before it started."""

    def __init__(self, good_until: datetime.datetime) -> None:
        super().__init__(f"good_until {good_until.isoformat()} passed before the handler started")
        self.good_until = good_until


def of_yield(exc: Yield) -> Release:
    delay = min(max(0, int(exc.delay_ms)), MAX_DELAY_MS)
    return Release(YIELD, exc.checkpoint, delay)


def expired(good_until: datetime.datetime | None) -> bool:
    """P-SDK-33: the worker's clock says the task's deadline passed."""
    return good_until is not None and datetime.datetime.now(datetime.timezone.utc) >= good_until


def unless_expired(handler: Any, ctx: TaskContext, good_until: datetime.datetime | None) -> Any:
    """Call a sync handler on its executor thread, unless the task expired while it waited
    for the thread (an application's executor smaller than the concurrency)."""
    if good_until is not None and expired(good_until):
        raise TaskExpired(good_until)
    return handler(ctx)


class ReleaseDeps(Protocol):
    """What delivering a release needs from the worker's runtime."""

    client: AsyncOrch8Client
    observer: Observer

    def new_backoff(self) -> Backoff: ...


async def deliver_release(deps: ReleaseDeps, ctx: TaskContext, release: Release) -> str:
    """Send the release, re-sending through outages until the lease deadline (P-SDK-9).

    Returns `released`, `lease_lost` or `cancelled` (a 409 fired the cancellation signal,
    P-SDK-5), or `given_up` (refused, or undeliverable at the lease deadline).
    """
    backoff = deps.new_backoff()
    while True:
        if ctx.is_cancelled:
            return ctx.cancel_reason or "lease_lost"
        try:
            await deps.client.release_task(
                ctx.id, lease_id=ctx.lease_id, delay_ms=release.delay_ms,
                checkpoint=release.checkpoint,
            )  # fmt: skip
            return "released"
        except LeaseLostError:
            ctx._cancel("lease_lost")
            return "lease_lost"
        except TaskCancelledError:
            ctx._cancel("cancelled")
            return "cancelled"
        except Orch8Error as exc:
            deps.observer.error("release", exc)
            passed = datetime.datetime.now(datetime.timezone.utc) >= ctx.lease_expires_at
            if not is_outage(exc) or passed:
                why = (
                    "release refused"
                    if not is_outage(exc)
                    else "release still undeliverable at the lease deadline"
                )
                message = f"{why}; task given up as lease lost"
                deps.observer.line(
                    ERROR, "given_up", message, ctx, cause_text(exc), operation="release"
                )
                return "given_up"
            delay = backoff.next_delay_ms(exc.retry_after_ms)
            deps.observer.call_failed(
                "release", exc, "release", f"retrying in {delay:.0f} ms", ctx, delay
            )
            await asyncio.sleep(delay / 1000)
