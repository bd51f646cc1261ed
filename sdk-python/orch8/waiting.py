"""`wait_instance` / `wait_task`: long-poll an instance or a task until it is final (P-SDK-25).

Each round is one safe `get_instance` / `get_task` call with `wait_ms` of at most 30000, so
outages are ridden out by the client's ordinary retries (P-SDK-2) and the server's answer
comes well inside the request timeout (P-WF-9). The helpers return the final object whatever
its status; only the deadline passing first raises `WaitTimeoutError`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .errors import Orch8Error

if TYPE_CHECKING:
    from ._generated.models import Instance, Task

# P-SDK-25: the longest wait_ms of one round, and the default timeout of a whole wait.
WAIT_ROUND_MS = 30_000
DEFAULT_WAIT_TIMEOUT_MS = 300_000

INSTANCE_FINAL = frozenset({"completed", "failed", "cancelled"})
TASK_FINAL = frozenset({"completed", "failed", "cancelled", "expired"})


class WaitTimeoutError(Orch8Error, TimeoutError):
    """The wait's timeout passed before the object was final; `last_state` is what was seen."""

    def __init__(self, kind: str, object_id: str, timeout_ms: int, last_state: Any) -> None:
        status = getattr(last_state, "status", None)
        super().__init__(
            f"{kind} {object_id} not final after {timeout_ms} ms (last status {status})",
            code="wait_timeout",
        )
        self.timeout_ms = timeout_ms
        self.last_state = last_state


class _Rounds:
    """The deadline of one wait and the `wait_ms` of its next round (P-SDK-25)."""

    def __init__(self, timeout_ms: int) -> None:
        if timeout_ms < 0:
            raise ValueError("timeout_ms must be >= 0")
        self.timeout_ms = timeout_ms
        self._deadline = time.monotonic() + timeout_ms / 1000
        self._first = True

    def next_wait_ms(self) -> int | None:
        """`wait_ms` for the next call, or None when the deadline has passed."""
        left = int((self._deadline - time.monotonic()) * 1000)
        if left <= 0 and not self._first:
            return None
        self._first = False  # one call even with timeout_ms=0: it answers the current state
        return max(0, min(WAIT_ROUND_MS, left))


class SyncWaiting:
    """`wait_instance` / `wait_task` of `Orch8Client`, built on its generated getters."""

    def get_instance(self, instance_id: str, *, wait_ms: int | None = None) -> Instance:
        raise NotImplementedError

    def get_task(self, task_id: str, *, wait_ms: int | None = None) -> Task:
        raise NotImplementedError

    def wait_instance(
        self, instance_id: str, *, timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS
    ) -> Instance:
        """Wait until the instance is completed, failed or cancelled and return it (P-SDK-25)."""
        rounds, last = _Rounds(timeout_ms), None
        while (wait_ms := rounds.next_wait_ms()) is not None:
            last = self.get_instance(instance_id, wait_ms=wait_ms)
            if last.status in INSTANCE_FINAL:
                return last
        raise WaitTimeoutError("instance", instance_id, timeout_ms, last)

    def wait_task(self, task_id: str, *, timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS) -> Task:
        """Wait until the task is completed, failed, cancelled or expired and return it."""
        rounds, last = _Rounds(timeout_ms), None
        while (wait_ms := rounds.next_wait_ms()) is not None:
            last = self.get_task(task_id, wait_ms=wait_ms)
            if last.status in TASK_FINAL:
                return last
        raise WaitTimeoutError("task", task_id, timeout_ms, last)


class AsyncWaiting:
    """`wait_instance` / `wait_task` of `AsyncOrch8Client`, built on its generated getters."""

    async def get_instance(self, instance_id: str, *, wait_ms: int | None = None) -> Instance:
        raise NotImplementedError

    async def get_task(self, task_id: str, *, wait_ms: int | None = None) -> Task:
        raise NotImplementedError

    async def wait_instance(
        self, instance_id: str, *, timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS
    ) -> Instance:
        """Wait until the instance is completed, failed or cancelled and return it (P-SDK-25)."""
        rounds, last = _Rounds(timeout_ms), None
        while (wait_ms := rounds.next_wait_ms()) is not None:
            last = await self.get_instance(instance_id, wait_ms=wait_ms)
            if last.status in INSTANCE_FINAL:
                return last
        raise WaitTimeoutError("instance", instance_id, timeout_ms, last)

    async def wait_task(self, task_id: str, *, timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS) -> Task:
        """Wait until the task is completed, failed, cancelled or expired and return it."""
        rounds, last = _Rounds(timeout_ms), None
        while (wait_ms := rounds.next_wait_ms()) is not None:
            last = await self.get_task(task_id, wait_ms=wait_ms)
            if last.status in TASK_FINAL:
                return last
        raise WaitTimeoutError("task", task_id, timeout_ms, last)
