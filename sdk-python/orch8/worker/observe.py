"""Worker statistics, hooks and structured log records (P-SDK-11, P-SDK-22)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ._logs import DEBUG, INFO, WARNING, answer_fields, call_event, cause_text, emit, log
from ._release import EXPIRED, YIELD, Release
from .context import TaskContext


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

    Always: tasks_claimed = completed + failed + lease_lost + cancelled + released
    + in_flight.
    """

    tasks_claimed: int = 0
    tasks_completed: int = 0
    tasks_failed: int = 0
    tasks_lease_lost: int = 0
    tasks_cancelled: int = 0
    tasks_released: int = 0
    in_flight: int = 0
    polls: int = 0
    poll_errors: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class Observer:
    """Counts events, calls user hooks and logs with structured `extra` fields."""

    def __init__(self, worker_id: str) -> None:
        self.worker_id = worker_id
        self.url = ""  # the server's base URL, named by call failures (P-SDK-31)
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
            out.update(task_id=ctx.id, handler=ctx.handler_name, attempt=ctx.attempt)
        out.update(fields)
        return out

    def line(
        self,
        level: int,
        event: str,
        message: str,
        ctx: TaskContext | None = None,
        cause: str | None = None,
        exc_info: BaseException | None = None,
        **fields: Any,
    ) -> None:
        """One log line: an event of P-SDK-31's table with its fields."""
        if not log.isEnabledFor(level):  # two debug lines per task: no fields built for them
            return
        emit(level, event, message, self.extra(ctx, **fields), cause, exc_info)

    def call_failed(
        self,
        operation: str,
        exc: BaseException,
        subject: str,
        then: str = "",
        ctx: TaskContext | None = None,
        retry_in_ms: float | None = None,
    ) -> None:
        """A call the worker made failed: `outage` or `refused`, naming URL and cause;
        "<subject> failed|refused[, <then>]: <cause>"."""
        fields: dict[str, Any] = {"operation": operation, "url": self.url, **answer_fields(exc)}
        if retry_in_ms is not None:
            fields["retry_in_ms"] = round(retry_in_ms)
        event = call_event(exc)
        message = f"{subject} {'failed' if event == 'outage' else 'refused'}"
        message += f", {then}" if then else ""
        self.line(WARNING, event, message, ctx, cause_text(exc), **fields)

    def fire(self, name: str, event: Any) -> None:
        # P-SDK-11: a broken hook is logged, naming the hook and its exception, and ignored.
        for hook in self.hooks[name]:
            try:
                hook(event)
            except Exception as exc:
                self.line(
                    WARNING,
                    "hook_error",
                    f"hook on_{name} raised; ignored",
                    None,
                    cause_text(exc),
                    hook=name,
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
        self.line(DEBUG, "task_started", "task started", ctx)
        if self.hooks["task_start"]:
            self.fire("task_start", TaskStartEvent(ctx))

    def completed(self, ctx: TaskContext, duration_ms: float) -> None:
        self._settle("tasks_completed", ctx, "completed", None, duration_ms)
        self.line(DEBUG, "task_completed", "task completed", ctx)
        if self.hooks["task_complete"]:
            self.fire("task_complete", TaskCompleteEvent(ctx, duration_ms))

    def failed(
        self, ctx: TaskContext, error: object, code: str, retryable: bool, duration_ms: float
    ) -> None:
        self._settle("tasks_failed", ctx, "failed", code, duration_ms)
        kind = "retryable" if retryable else "permanent"
        self.line(
            DEBUG,
            "task_failed",
            f"task failed with {code} ({kind})",
            ctx,
            code=code,
            retryable=retryable,
        )
        self.fire("task_fail", TaskFailEvent(ctx, code, retryable, duration_ms))

    def released(self, ctx: TaskContext, release: Release, duration_ms: float | None) -> None:
        """The server took the task back: a yield (P-SDK-32) or an expiry (P-SDK-33)."""
        self._settle("tasks_released", ctx, "released", None, duration_ms)
        if release.reason == EXPIRED:
            deadline = release.good_until.isoformat() if release.good_until else None
            message = "task expired before it started; released without running"
            self.line(INFO, "task_released", message, ctx, reason=EXPIRED, good_until=deadline)
        else:
            message = f"task yielded; released (delay {release.delay_ms} ms)"
            self.line(DEBUG, "task_released", message, ctx, reason=YIELD, delay_ms=release.delay_ms)

    def abandoned(
        self,
        ctx: TaskContext,
        reason: str,
        why: str = "",
        duration_ms: float | None = None,
        logged: bool = False,
    ) -> None:
        """Given up without a result: lease lost or cancelled (P-SDK-5); `logged`: the
        caller already logged why (`given_up`)."""
        reason = "cancelled" if reason == "cancelled" else "lease_lost"
        counter = "tasks_cancelled" if reason == "cancelled" else "tasks_lease_lost"
        self._settle(counter, ctx, reason, None, duration_ms)
        if not logged:
            level = INFO if reason == "cancelled" else WARNING
            message = f"task given up, no result sent: {reason}"
            self.line(level, "abandoned", message, ctx, why or reason, reason=reason)
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
