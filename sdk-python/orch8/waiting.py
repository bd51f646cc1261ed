"""`wait_instance` / `wait_task`: long-poll an instance or a task until it is final (P-SDK-25).

Each round is one safe `get_instance` / `get_task` call with `wait_ms` of at most 30000, so
the server's answer comes well inside the request timeout (P-WF-9). Outages (P-SDK-16) are
ridden out with the client's backoff until the wait's own deadline, not only for one call's
retries; any other error ends the wait. The helpers return the final object whatever its
status; only the deadline passing first raises `WaitTimeoutError`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ._generated import _constants as C
from .errors import Orch8Error, is_outage

if TYPE_CHECKING:
    from ._generated.models import Instance, Task
    from ._http import ClientConfig, RetryPolicy


class _Stated(Protocol):
    @property
    def status(self) -> Any: ...


_T = TypeVar("_T", bound=_Stated)

# P-SDK-25: the longest wait_ms of one round, and the default timeout of a whole wait.
WAIT_ROUND_MS = C.WAIT_ROUND_MS
DEFAULT_WAIT_TIMEOUT_MS = C.DEFAULT_WAIT_TIMEOUT_MS

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
    """The deadline of one wait, the `wait_ms` of its next round, and the pause after an
    outage (P-SDK-25)."""

    def __init__(self, timeout_ms: int) -> None:
        if timeout_ms <= 0:  # P-SDK-25: 0 or less means the default
            timeout_ms = DEFAULT_WAIT_TIMEOUT_MS
        self.timeout_ms = timeout_ms
        self._deadline = time.monotonic() + timeout_ms / 1000
        self._outages = 0
        self._first = True

    def left_ms(self) -> int:
        return int((self._deadline - time.monotonic()) * 1000)

    def next_wait_ms(self) -> int | None:
        """`wait_ms` for the next call, or None when the deadline has passed."""
        left = self.left_ms()
        if left <= 0 and not self._first:
            return None
        self._first = False  # the first round is always asked: it answers the current state
        return max(0, min(WAIT_ROUND_MS, left))

    def answered(self) -> None:
        self._outages = 0

    def outage_pause_s(self, error: BaseException, policy: RetryPolicy) -> float:
        """Seconds to pause after an outage, by the client's backoff (P-SDK-2); re-raises
        any other error (it ends the wait)."""
        if not is_outage(error):
            raise error
        pause_ms = policy.delay_ms(self._outages, getattr(error, "retry_after_ms", None))
        self._outages += 1
        return max(0.0, min(pause_ms, self.left_ms())) / 1000


class SyncWaiting:
    """`wait_instance` / `wait_task` of `Orch8Client`, built on its generated getters."""

    config: ClientConfig

    def get_instance(self, instance_id: str, *, wait_ms: int | None = None) -> Instance:
        raise NotImplementedError

    def get_task(self, task_id: str, *, wait_ms: int | None = None) -> Task:
        raise NotImplementedError

    def wait_instance(
        self, instance_id: str, *, timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS
    ) -> Instance:
        """Wait until the instance is completed, failed or cancelled and return it (P-SDK-25)."""
        return self._wait("instance", instance_id, self.get_instance, INSTANCE_FINAL, timeout_ms)

    def wait_task(self, task_id: str, *, timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS) -> Task:
        """Wait until the task is completed, failed, cancelled or expired and return it."""
        return self._wait("task", task_id, self.get_task, TASK_FINAL, timeout_ms)

    def _wait(
        self,
        kind: str,
        object_id: str,
        get: Callable[..., _T],
        final: frozenset[str],
        timeout_ms: int,
    ) -> _T:
        rounds, last = _Rounds(timeout_ms), None
        while (wait_ms := rounds.next_wait_ms()) is not None:
            try:
                last = get(object_id, wait_ms=wait_ms)
            except Orch8Error as error:
                time.sleep(rounds.outage_pause_s(error, self.config.retry))
                continue
            rounds.answered()
            if last.status in final:
                return last
        raise WaitTimeoutError(kind, object_id, rounds.timeout_ms, last)


class AsyncWaiting:
    """`wait_instance` / `wait_task` of `AsyncOrch8Client`, built on its generated getters."""

    config: ClientConfig

    async def get_instance(self, instance_id: str, *, wait_ms: int | None = None) -> Instance:
        raise NotImplementedError

    async def get_task(self, task_id: str, *, wait_ms: int | None = None) -> Task:
        raise NotImplementedError

    async def wait_instance(
        self, instance_id: str, *, timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS
    ) -> Instance:
        """Wait until the instance is completed, failed or cancelled and return it (P-SDK-25)."""
        return await self._wait(
            "instance", instance_id, self.get_instance, INSTANCE_FINAL, timeout_ms
        )

    async def wait_task(self, task_id: str, *, timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS) -> Task:
        """Wait until the task is completed, failed, cancelled or expired and return it."""
        return await self._wait("task", task_id, self.get_task, TASK_FINAL, timeout_ms)

    async def _wait(
        self,
        kind: str,
        object_id: str,
        get: Callable[..., Awaitable[_T]],
        final: frozenset[str],
        timeout_ms: int,
    ) -> _T:
        rounds, last = _Rounds(timeout_ms), None
        while (wait_ms := rounds.next_wait_ms()) is not None:
            try:
                last = await get(object_id, wait_ms=wait_ms)
            except Orch8Error as error:
                await asyncio.sleep(rounds.outage_pause_s(error, self.config.retry))
                continue
            rounds.answered()
            if last.status in final:
                return last
        raise WaitTimeoutError(kind, object_id, rounds.timeout_ms, last)
