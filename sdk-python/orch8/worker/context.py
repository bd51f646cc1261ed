"""TaskContext: what a handler receives for one attempt of one task (P-SDK-10)."""

from __future__ import annotations

import asyncio
import datetime
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._units import ms_option
from ..errors import LeaseLostError, TaskCancelledError
from ._waits import wait_event

if TYPE_CHECKING:
    from ..async_client import AsyncOrch8Client
    from ..telemetry import TaskTelemetry

_OMIT: Any = object()
# Guards the lazy creation of a context's threading.Event against a cancellation firing
# on the loop thread meanwhile (one lock for all: both sides are rare and short).
_SIGNAL_LOCK = threading.Lock()


@dataclass
class TaskContext:
    """One claimed attempt: inputs, lease, previous checkpoint, heartbeat and cancellation.

    `cancelled` is a threading.Event set when the lease is lost, the task is cancelled by an
    operator, or shutdown outlives the grace period (P-SDK-5, P-SDK-7); `cancel_reason` says
    which (`lease_lost`, `cancelled`, `shutdown`). Once it is set no result is sent.
    `headers` are the task's headers as received, `traceparent` included (P-TEL-1).
    """

    id: str
    handler_name: str
    queue_name: str
    params: dict[str, Any]
    context: dict[str, Any]
    headers: dict[str, str]
    attempt: int
    max_attempts: int
    lease_id: str
    lease_expires_at: datetime.datetime
    checkpoint: dict[str, Any] | None
    worker_id: str
    cancel_reason: str | None = None
    _client: AsyncOrch8Client | None = field(default=None, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    # Both signals are made when first asked for: most handlers never look at them, and
    # a threading.Event per task was ~5% of the worker's CPU at 100 tasks per poll.
    _cancelled: threading.Event | None = field(default=None, repr=False)
    _cancelled_async: asyncio.Event | None = field(default=None, repr=False)
    _telemetry: TaskTelemetry | None = field(default=None, repr=False)  # P-TEL-3 span

    def _bind(self, client: AsyncOrch8Client, loop: asyncio.AbstractEventLoop) -> None:
        """Attach the worker's client and loop; called on the loop thread."""
        self._client = client
        self._loop = loop

    @property
    def cancelled(self) -> threading.Event:
        """The cancellation signal as a threading.Event (set once `cancel_reason` is)."""
        event = self._cancelled
        if event is None:
            with _SIGNAL_LOCK:
                event = self._cancelled
                if event is None:
                    event = threading.Event()
                    if self.cancel_reason is not None:
                        event.set()
                    self._cancelled = event
        return event

    @property
    def is_cancelled(self) -> bool:
        return self.cancel_reason is not None

    def _cancel(self, reason: str) -> bool:
        """Fire the cancellation signal once; True if this call fired it."""
        with _SIGNAL_LOCK:
            if self.cancel_reason is not None:
                return False
            self.cancel_reason = reason
            event, waited = self._cancelled, self._cancelled_async
        if event is not None:
            event.set()
        if self._loop is not None and waited is not None:
            self._loop.call_soon_threadsafe(waited.set)
        return True

    def _update_lease(self, expires_at: datetime.datetime | None) -> None:
        if expires_at is not None:
            self.lease_expires_at = expires_at

    async def heartbeat_async(
        self,
        *,
        progress: Any = _OMIT,
        checkpoint: Mapping[str, Any] | None = None,
        lease_ms: int | None = None,
    ) -> None:
        """Extend this task's lease now, saving progress and a checkpoint (P-LEASE-5, P-CKPT-1).

        P-SDK-19: a 409 `lease_lost` / `task_cancelled` fires the cancellation signal and
        raises LeaseLostError / TaskCancelledError, so the handler can stop; the worker then
        sends no result. Outages are retried by the client (P-SDK-2) before they surface.
        """
        assert self._client is not None, "TaskContext is not bound to a worker"
        kwargs: dict[str, Any] = {"lease_id": self.lease_id, "checkpoint": checkpoint}
        if lease_ms is not None:
            kwargs["lease_ms"] = lease_ms  # never the deprecated extend_ms (P-SDK-19)
        if progress is not _OMIT:
            kwargs["progress"] = progress
        try:
            status = await self._client.heartbeat_task(self.id, **kwargs)
        except LeaseLostError:
            self._cancel("lease_lost")
            raise
        except TaskCancelledError:
            self._cancel("cancelled")
            raise
        self._update_lease(status.lease_expires_at)

    def heartbeat(
        self,
        *,
        progress: Any = _OMIT,
        checkpoint: Mapping[str, Any] | None = None,
        lease_ms: int | None = None,
    ) -> None:
        """Blocking twin of `heartbeat_async`, for sync handlers running in the thread pool."""
        loop = self._loop
        assert loop is not None, "TaskContext is not bound to a worker"
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise RuntimeError("in an async handler use `await ctx.heartbeat_async(...)`")
        future = asyncio.run_coroutine_threadsafe(
            self.heartbeat_async(progress=progress, checkpoint=checkpoint, lease_ms=lease_ms), loop
        )
        future.result()

    async def wait_cancelled(
        self, timeout: float | None = None, *, timeout_ms: int | None = None
    ) -> bool:
        """For async handlers: wait until the cancellation signal fires (True) or timeout."""
        assert self._loop is not None, "TaskContext is not bound to a worker"
        limit = ms_option("wait_cancelled", "timeout_ms", timeout_ms, "timeout", timeout, None)
        if self._cancelled_async is None:  # on the loop thread, as _cancel's set of it
            with _SIGNAL_LOCK:
                self._cancelled_async = asyncio.Event()
                if self.cancel_reason is not None:
                    self._cancelled_async.set()
        return await wait_event(self._cancelled_async, None if limit is None else limit / 1000)
