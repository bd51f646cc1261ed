"""Worker statistics, hooks and structured log records (P-SDK-11)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from .context import TaskContext

log = logging.getLogger("orch8.worker")

# Hook signatures: on_poll(claimed: int), on_task_started(ctx), on_task_completed(ctx, output),
# on_task_failed(ctx, error: BaseException).
PollHook = Callable[[int], Any]
StartHook = Callable[[TaskContext], Any]
CompleteHook = Callable[[TaskContext, Any], Any]
FailHook = Callable[[TaskContext, BaseException], Any]


@dataclass
class WorkerStats:
    """Counters since the worker started; `in_flight` is a snapshot."""

    tasks_claimed: int = 0
    tasks_completed: int = 0
    tasks_failed: int = 0
    tasks_lease_lost: int = 0
    tasks_cancelled: int = 0
    in_flight: int = 0
    polls: int = 0
    poll_errors: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class Observer:
    """Counts events, calls user hooks and logs with structured `extra` fields."""

    def __init__(self, worker_id: str) -> None:
        self.worker_id = worker_id
        self._stats = WorkerStats()
        self._lock = threading.Lock()
        self.on_poll: list[PollHook] = []
        self.on_task_started: list[StartHook] = []
        self.on_task_completed: list[CompleteHook] = []
        self.on_task_failed: list[FailHook] = []

    def snapshot(self, in_flight: int) -> WorkerStats:
        with self._lock:
            return WorkerStats(**{**self._stats.as_dict(), "in_flight": in_flight})

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self._stats, name, getattr(self._stats, name) + n)

    def extra(self, ctx: TaskContext | None = None, **fields: Any) -> dict[str, Any]:
        """Structured log fields: worker id, and the task's id, handler and attempt."""
        out: dict[str, Any] = {"worker_id": self.worker_id}
        if ctx is not None:
            out.update(task_id=ctx.id, handler_name=ctx.handler_name, attempt=ctx.attempt)
        out.update(fields)
        return out

    def _fire(self, hooks: list[Callable[..., Any]], *args: Any) -> None:
        # A broken hook must never break the worker loop.
        for hook in hooks:
            try:
                hook(*args)
            except Exception:
                log.exception("worker hook failed", extra=self.extra(hook=repr(hook)))

    def polled(self, claimed: int) -> None:
        self.count("polls")
        self.count("tasks_claimed", claimed)
        self._fire(self.on_poll, claimed)

    def started(self, ctx: TaskContext) -> None:
        log.info("task started", extra=self.extra(ctx))
        self._fire(self.on_task_started, ctx)

    def completed(self, ctx: TaskContext, output: Any) -> None:
        self.count("tasks_completed")
        log.info("task completed", extra=self.extra(ctx))
        self._fire(self.on_task_completed, ctx, output)

    def failed(self, ctx: TaskContext, error: BaseException, code: str, retryable: bool) -> None:
        self.count("tasks_failed")
        log.warning(
            "task failed",
            extra=self.extra(ctx, error_code=code, retryable=retryable, error=str(error)),
        )
        self._fire(self.on_task_failed, ctx, error)

    def lost(self, ctx: TaskContext, reason: str) -> None:
        """The attempt ended without a report: lease lost or task cancelled (P-SDK-5)."""
        self.count("tasks_cancelled" if reason == "cancelled" else "tasks_lease_lost")
        log.warning("task abandoned, no result sent", extra=self.extra(ctx, reason=reason))
