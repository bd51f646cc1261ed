"""Worker statistics, hooks and structured log records (P-SDK-11, P-SDK-22)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from .context import TaskContext

log = logging.getLogger("orch8.worker")


@dataclass(frozen=True)
class PollEvent:
    """`on_poll`: after each answered poll."""

    claimed: int
    duration_ms: float


@dataclass(frozen=True)
class TaskStartEvent:
    """`on_task_start`: before the handler runs."""

    task: TaskContext


@dataclass(frozen=True)
class TaskCompleteEvent:
    """`on_task_complete`: the server acknowledged the completion; duration = handler run."""

    task: TaskContext
    duration_ms: float


@dataclass(frozen=True)
class TaskFailEvent:
    """`on_task_fail`: the server acknowledged the failure."""

    task: TaskContext
    code: str
    retryable: bool
    duration_ms: float


@dataclass(frozen=True)
class TaskAbandonedEvent:
    """`on_task_abandoned`: given up with no result sent (`lease_lost` or `cancelled`)."""

    task: TaskContext
    reason: str


@dataclass(frozen=True)
class ErrorEvent:
    """`on_error`: a call the worker made failed (poll, heartbeat, complete, fail, ...)."""

    operation: str
    error: BaseException


HOOKS = ("poll", "task_start", "task_complete", "task_fail", "task_abandoned", "error")


@dataclass
class WorkerStats:
    """Counters since the worker started (P-SDK-11); `in_flight` is a snapshot.

    Always: tasks_claimed = completed + failed + lease_lost + cancelled + in_flight.
    """

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
        self.hooks: dict[str, list[Callable[[Any], Any]]] = {name: [] for name in HOOKS}

    def snapshot(self) -> WorkerStats:
        with self._lock:
            return WorkerStats(**self._stats.as_dict())

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

    def fire(self, name: str, event: Any) -> None:
        # P-SDK-11: a broken hook is logged, naming the hook and its exception, and ignored.
        for hook in self.hooks[name]:
            try:
                hook(event)
            except Exception as exc:
                log.warning(
                    "worker hook on_%s (%r) raised %s: %s",
                    name,
                    hook,
                    type(exc).__name__,
                    exc,
                    extra=self.extra(hook=name),
                )

    # --- the events; each keeps the counters' invariant ----------------------------------

    def poll_sent(self) -> None:
        self.count("polls")

    def poll_failed(self, error: BaseException) -> None:
        self.count("poll_errors")
        self.error("poll", error)

    def polled(self, claimed: int, duration_ms: float) -> None:
        with self._lock:  # one lock: every snapshot keeps the invariant
            self._stats.tasks_claimed += claimed
            self._stats.in_flight += claimed
        self.fire("poll", PollEvent(claimed, duration_ms))

    def started(self, ctx: TaskContext) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("task started", extra=self.extra(ctx))
        if self.hooks["task_start"]:
            self.fire("task_start", TaskStartEvent(ctx))

    def completed(self, ctx: TaskContext, duration_ms: float) -> None:
        self._settle("tasks_completed", ctx, "completed", None, duration_ms)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("task completed", extra=self.extra(ctx))
        if self.hooks["task_complete"]:
            self.fire("task_complete", TaskCompleteEvent(ctx, duration_ms))

    def failed(
        self, ctx: TaskContext, error: object, code: str, retryable: bool, duration_ms: float
    ) -> None:
        self._settle("tasks_failed", ctx, "failed", code, duration_ms)
        log.warning(
            "task failed: %s (code %s, %s)",
            error,
            code,
            "retryable" if retryable else "permanent",
            extra=self.extra(ctx, error_code=code, retryable=retryable),
        )
        self.fire("task_fail", TaskFailEvent(ctx, code, retryable, duration_ms))

    def abandoned(
        self, ctx: TaskContext, reason: str, why: str = "", duration_ms: float | None = None
    ) -> None:
        """Given up without a result: lease lost or cancelled (P-SDK-5)."""
        reason = "cancelled" if reason == "cancelled" else "lease_lost"
        counter = "tasks_cancelled" if reason == "cancelled" else "tasks_lease_lost"
        self._settle(counter, ctx, reason, None, duration_ms)
        log.warning(
            "task abandoned, no result sent: %s%s",
            reason,
            f" ({why})" if why else "",
            extra=self.extra(ctx, reason=reason),
        )
        self.fire("task_abandoned", TaskAbandonedEvent(ctx, reason))

    def error(self, operation: str, error: BaseException) -> None:
        self.fire("error", ErrorEvent(operation, error))

    def _settle(
        self, counter: str, ctx: TaskContext, outcome: str, code: str | None, ms: float | None
    ) -> None:
        with self._lock:
            setattr(self._stats, counter, getattr(self._stats, counter) + 1)
            self._stats.in_flight -= 1
        if ctx._telemetry is not None:  # P-TEL-3/4: ends the process span, records metrics
            telemetry, ctx._telemetry = ctx._telemetry, None  # once per attempt
            telemetry.ended(outcome, code, None if ms is None else ms / 1000)
