"""The SDK's telemetry seam (docs/protocol.md section 15).

The core package defines only these Protocols and calls them at fixed points; it never
imports OpenTelemetry. `orch8.otel.OpenTelemetry` is the stock implementation. Without a
telemetry object every call site is skipped by a single None check, so the cost is unchanged.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from ._generated._constants import PRODUCES

if TYPE_CHECKING:
    from ._generated.models import ClaimedTask

# Outcomes of one task, as in P-SDK-11 and the span attribute `orch8.outcome` (P-TEL-3).
COMPLETED = "completed"
FAILED = "failed"
LEASE_LOST = "lease_lost"
CANCELLED = "cancelled"


class SendScope(Protocol):
    """One producer span (P-TEL-1), open while the enqueue request is sent."""

    def sent(self, task_ids: Sequence[str]) -> None:
        """The server answered: the ids of the enqueued tasks, in order."""


class TaskTelemetry(Protocol):
    """One claimed attempt: its process span and its share of the metrics (P-TEL-3/4)."""

    def current(self) -> AbstractContextManager[object]:
        """Makes the process span current; code started inside (the handler) inherits it."""

    def ended(self, outcome: str, code: str | None, handler_s: float | None) -> None:
        """The attempt ended as `outcome`; `code` for a failure; `handler_s` its run time."""


class WorkerTelemetry(Protocol):
    """The worker's side of telemetry; one per `Worker.run()`."""

    def polled(self, started_ns: int, tasks: Sequence[ClaimedTask] | None) -> object:
        """A poll sent at `started_ns` (time.time_ns) answered `tasks`, or failed (None).

        Returns what `task_started` links each claimed task to (the receive span).
        """

    def task_started(self, task: ClaimedTask, poll: object) -> TaskTelemetry:
        """A claimed task is about to run (or be refused with no_handler)."""

    def heartbeat(self, ok: bool) -> None:
        """One worker heartbeat answered (True) or failed (False)."""

    def held(self, delta: int, free: int) -> None:
        """The number of tasks held changed by `delta` (+1 / -1); `free` slots are left."""


class Telemetry(Protocol):
    """What the client and the worker report; pass one as their `telemetry` option."""

    def send(
        self, tasks: Sequence[MutableMapping[str, Any]], batch: bool
    ) -> AbstractContextManager[SendScope]:
        """P-TEL-1: a producer span around one enqueue (`batch` False) or one batch.

        `tasks` are the JSON bodies about to be sent; it adds `traceparent` (and
        `tracestate`) to each one's `headers` unless the caller already set `traceparent`.
        """

    def worker(self, worker_id: str, concurrency: int) -> WorkerTelemetry:
        """The spans and instruments of one worker (P-TEL-3, P-TEL-4)."""


# --- the client's call site (P-TEL-1) ------------------------------------------------------


def send_tasks(request: dict[str, Any]) -> tuple[list[dict[str, Any]], bool] | None:
    """The task bodies of a request that creates tasks (x-orch8-sdk produces), and whether
    it is a batch; None for any other request."""
    batch = PRODUCES.get((str(request.get("method", "")).upper(), request.get("url", "")))
    if batch is None:
        return None
    body = request.get("json")
    if not isinstance(body, dict):
        return None
    tasks = body.get("tasks") if batch else [body]
    return (tasks, batch) if isinstance(tasks, list) else None


def sent_ids(answer: Any) -> list[str]:
    """The ids of an enqueue's answer: one Task, or the list of an enqueue_batch."""
    tasks = answer if isinstance(answer, list) else [answer]
    return [t.id for t in tasks if isinstance(getattr(t, "id", None), str)]
