"""Unit-test a handler without a server (docs/protocol.md 14c, P-KIT-1..6); test workflows
against a throwaway server whose clock the test moves (`TestServer`, section 17).

    from orch8.testing import TestTask

    outcome = TestTask(params={"n": 2}).run(double)
    assert outcome.status == "completed" and outcome.output == {"n": 4}

The handler gets a real `TaskContext`; the outcome is what the worker would report, worked
out by the worker's own code (classification, strict JSON, P-SDK-27 bounds, shutdown text).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Literal, cast

from ._test_server import ServerNotFoundError, TestServer
from .async_client import AsyncOrch8Client
from .errors import LeaseLostError, TaskCancelledError
from .worker._drain import shutdown_message
from .worker._execute import SHUTDOWN, Handler, Slot, output_rejected, run_handler
from .worker._execute import Outcome as _Attempt
from .worker._report import bound_details
from .worker.context import TaskContext

__all__ = ["Heartbeat", "LogLine", "Outcome", "ServerNotFoundError", "TestServer", "TestTask"]

Status = Literal["completed", "failed", "released", "cancelled", "lease_lost"]

MAX_BODY_BYTES = 1_048_576  # the server's default body limit (section 13)
# P-ERR-5 refuses bodies nested deeper than 128 levels; a completion batch's body, its
# `items` array and the item object take three of them (P-KIT-5).
MAX_OUTPUT_DEPTH = 125
_LEVELS = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warning"}


@dataclass(frozen=True)
class Heartbeat:
    """One heartbeat the handler sent (P-KIT-3); `None` where it gave none."""

    progress: Any = None
    checkpoint: dict[str, Any] | None = None


@dataclass(frozen=True)
class LogLine:
    """One line written through `TestTask.logger`: `debug`, `info`, `warning` or `error`."""

    level: str
    message: str


@dataclass(frozen=True)
class Outcome:
    """What the worker would report for the attempt (P-KIT-5)."""

    status: Status
    output: Any = None
    error: str | None = None
    code: str | None = None
    retryable: bool | None = None
    retry_after_ms: int | None = None
    details: dict[str, Any] | None = None
    checkpoint: dict[str, Any] | None = None
    delay_ms: int | None = None  # `released`: the yield's delay (P-SDK-32)


class TestTask:
    """A claimed attempt for a unit test: the handler's inputs, records and triggers."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(
        self,
        *,
        params: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        attempt: int = 1,
        max_attempts: int = 3,
        checkpoint: Mapping[str, Any] | None = None,
        task_id: str = "test-task-1",
        handler_name: str = "test-handler",
        queue_name: str = "default",
        worker_id: str = "test-worker",
        lease_ms: int = 60_000,
        grace_period_ms: int = 25_000,
        max_body_bytes: int = MAX_BODY_BYTES,
        on_heartbeat: Callable[[Heartbeat], None] | None = None,
    ) -> None:
        self.lease_ms = lease_ms
        self.grace_period_ms = grace_period_ms
        self.max_body_bytes = max_body_bytes
        self.on_heartbeat = on_heartbeat
        self.heartbeats: list[Heartbeat] = []
        self.logs: list[LogLine] = []
        self.logger = logging.Logger(f"orch8.testing.{task_id}", logging.DEBUG)
        self.logger.addHandler(_Recorder(self.logs))
        self.ctx = TaskContext(
            id=task_id,
            handler_name=handler_name,
            queue_name=queue_name,
            params=_as_json(dict(params or {})),
            context=_as_json(dict(context or {})),
            headers=dict(headers or {}),
            attempt=attempt,
            max_attempts=max_attempts,
            lease_id="test-lease-1",
            lease_expires_at=_after(lease_ms),
            checkpoint=None if checkpoint is None else _as_json(dict(checkpoint)),
            worker_id=worker_id,
        )
        self._slot: Slot | None = None
        self._ran = False
        self._lock = threading.Lock()

    @property
    def checkpoints(self) -> list[dict[str, Any]]:
        """The checkpoints saved so far; the last is what the next attempt gets (P-CKPT-1)."""
        return [hb.checkpoint for hb in self.heartbeats if hb.checkpoint is not None]

    def cancel(self) -> None:
        """An operator cancelled the task (P-SDK-5); from any thread."""
        self.ctx._cancel("cancelled")

    def lose_lease(self) -> None:
        """The lease was lost (P-SDK-5); from any thread."""
        self.ctx._cancel("lease_lost")

    def shutdown(self) -> None:
        """The worker's grace period ran out now (P-SDK-7); an async handler is cancelled."""
        if not self.ctx._cancel("shutdown"):
            return
        slot, loop = self._slot, self.ctx._loop
        if slot is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(slot.abort)

    def run(self, handler: Handler) -> Outcome:
        """Run `handler` once and return what the worker would report (blocking)."""
        return asyncio.run(self.run_async(handler))

    async def run_async(self, handler: Handler) -> Outcome:
        """`run` for tests that already run an event loop."""
        with self._lock:
            if self._ran:
                raise RuntimeError("a TestTask runs one handler once; build another")
            self._ran = True
        self.ctx.lease_expires_at = _after(self.lease_ms)
        client = cast(AsyncOrch8Client, _HeartbeatServer(self))
        self.ctx._bind(client, asyncio.get_running_loop())
        slot = self._slot = Slot(self.ctx, handler)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="orch8-test") as executor:
            attempt = await run_handler(slot, executor)
        return self._outcome(attempt)

    def _outcome(self, attempt: _Attempt) -> Outcome:
        reason = self.ctx.cancel_reason
        if reason == "shutdown":  # P-SDK-29
            message = shutdown_message(self.ctx.worker_id, self.grace_period_ms, None)
            attempt = _Attempt(error=message, retryable=True, code=SHUTDOWN)
        elif reason is not None:  # P-SDK-5: nothing is reported
            return Outcome(status="lease_lost" if reason == "lease_lost" else "cancelled")
        elif attempt.release is not None:  # P-SDK-32: the handler yielded
            release = attempt.release
            return Outcome(
                status="released", checkpoint=release.checkpoint, delay_ms=release.delay_ms
            )
        elif attempt.ok:
            text = json.dumps(
                attempt.output, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            )
            stored = json.loads(text)
            refusal = _refusal(text, stored, self.max_body_bytes)
            if refusal is None:
                return Outcome(status="completed", output=stored)
            attempt = output_rejected(*refusal)
        body = attempt.fail_body()
        return Outcome(
            status="failed",
            error=body["error"],
            code=body["code"],
            retryable=body["retryable"],
            retry_after_ms=body["retry_after_ms"],
            details=bound_details(body["details"]),
            checkpoint=body["checkpoint"],
        )


class _HeartbeatServer:
    """Answers the context's heartbeats as the server would (P-KIT-3, P-KIT-4)."""

    def __init__(self, task: TestTask) -> None:
        self.task = task

    async def heartbeat_task(
        self,
        task_id: str,
        *,
        lease_id: str,
        checkpoint: Mapping[str, Any] | None = None,
        progress: Any = None,
        lease_ms: int | None = None,
    ) -> SimpleNamespace:
        task = self.task
        beat = Heartbeat(
            _as_json(progress), None if checkpoint is None else _as_json(dict(checkpoint))
        )
        if task.on_heartbeat is not None:
            task.on_heartbeat(beat)
        reason = task.ctx.cancel_reason
        if reason == "cancelled":
            raise TaskCancelledError(
                f"task {task_id} was cancelled", status=409, code="task_cancelled"
            )
        if reason is not None:
            raise LeaseLostError(
                f"lease {lease_id} is no longer current", status=409, code="lease_lost"
            )
        task.heartbeats.append(beat)
        return SimpleNamespace(lease_expires_at=_after(lease_ms or task.lease_ms))


class _Recorder(logging.Handler):
    def __init__(self, lines: list[LogLine]) -> None:
        super().__init__(logging.DEBUG)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(LogLine(_LEVELS.get(record.levelno, "error"), record.getMessage()))


def _as_json(value: Any) -> Any:
    """`value` as it reaches the handler or is stored: through JSON (tuples become lists)."""
    return json.loads(json.dumps(value, allow_nan=False))


def _after(ms: int) -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(milliseconds=ms)


def _refusal(text: str, stored: Any, max_body_bytes: int) -> tuple[int, str] | None:
    """How the server would refuse a completion carrying this output alone (P-ERR-5)."""
    if len(text.encode("utf-8", "replace")) > max_body_bytes:
        return 413, "payload_too_large"
    if _depth(stored) > MAX_OUTPUT_DEPTH:
        return 400, "payload_too_deep"
    if _has_nul(stored):
        return 400, "unsupported_value"
    return None


def _depth(value: Any) -> int:
    """Levels of arrays and objects: `[]` is 1, a scalar 0 (iterative: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def _has_nul(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and "\x00" in item:
            return True
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
