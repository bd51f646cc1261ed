"""Completions reported group-commit style through the batch endpoint (P-SDK-12, P-SDK-15)."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any

from ..errors import Orch8Error, is_outage
from . import _wire
from ._execute import DeliverDeps, Slot, lease_deadline_passed
from ._logs import ERROR, cause_text

MAX_BATCH = 100  # items per POST /workers/tasks/complete/batch (openapi maxItems)


@dataclass(frozen=True)
class Verdict:
    """How a completion ended: `completed`, `lease_lost`, `cancelled`, `rejected` or
    `given_up` (undeliverable at the lease deadline: counted as lease lost, already logged).

    `rejected` carries the refusal's HTTP status and problem code; the caller then fails
    the task permanently with `output_rejected` (P-SDK-15).
    """

    kind: str
    status: int | None = None
    code: str | None = None


@dataclass(eq=False)
class _Pending:
    """One completion waiting for (or riding in) a batch request.

    Its runner awaits `done` directly (a shield cost two more futures per task): cancelling
    the runner cancels `done` but not the completion, which goes out until `settled`.
    """

    slot: Slot
    output: Any
    done: asyncio.Future[Verdict]
    settled: bool = False

    def settle(self, verdict: Verdict) -> None:
        if self.settled:
            return
        self.settled = True
        if not self.done.done():  # done: cancelled along with its runner
            self.done.set_result(verdict)


class Completer:
    """Group-commit completions (P-SDK-12).

    With no batch request in flight, the results that become ready in the same event-loop
    turn go out together at the end of that turn; results that become ready while a request
    is in flight wait for it and then go together (at most MAX_BATCH). No timer. An outage
    re-sends the items with the backoff of P-SDK-9 until each one's lease deadline. A batch
    refused as a whole (a 4xx other than 408/429, e.g. 413) is split in halves and re-sent
    until items go alone (P-SDK-15).
    """

    def __init__(self, deps: DeliverDeps) -> None:
        self.deps = deps
        self._queue: deque[_Pending] = deque()
        self._sender: asyncio.Task[None] | None = None
        self._outage: Orch8Error | None = None  # the last one met, named when logging

    @property
    def in_flight(self) -> bool:
        return self._sender is not None and not self._sender.done()

    async def complete(self, slot: Slot, output: Any) -> Verdict:
        """Report a successful outcome and wait for its verdict."""
        if slot.ctx.is_cancelled:
            return Verdict(slot.ctx.cancel_reason or "lease_lost")
        entry = _Pending(slot, output, asyncio.get_running_loop().create_future())
        self._queue.append(entry)
        if not self.in_flight:
            # The sender's first step runs after the callbacks already scheduled (call_soon,
            # not a timer), so results that become ready in this loop turn go together.
            self._sender = asyncio.ensure_future(self._send_loop())
        return await entry.done

    async def aclose(self) -> None:
        """Wait for the batch request in flight, if any (P-SDK-7: before deregistering)."""
        if self._sender is not None:
            await asyncio.gather(self._sender, return_exceptions=True)

    def _take(self) -> list[_Pending]:
        """Up to MAX_BATCH queued results still worth sending, oldest first."""
        batch: list[_Pending] = []
        while self._queue and len(batch) < MAX_BATCH:
            entry = self._queue.popleft()
            if entry.settled:
                continue
            if entry.slot.ctx.is_cancelled:  # lease lost or cancelled meanwhile: send nothing
                entry.settle(Verdict(entry.slot.ctx.cancel_reason or "lease_lost"))
                continue
            batch.append(entry)
        return batch

    async def _send_loop(self) -> None:
        backoff = self.deps.new_backoff()
        batch = self._take()
        try:
            while True:
                if batch:
                    retry, after_ms = await self._send(batch)
                    retry = self._keep_for_resend(retry)
                    if retry:
                        delay = backoff.next_delay_ms(after_ms)
                        self.deps.observer.call_failed(
                            "complete",
                            self._outage or Orch8Error("no outcome", code="connection_error"),
                            f"completion batch of {len(retry)}",
                            f"retrying in {delay:.0f} ms",
                            retry_in_ms=delay,
                        )
                        await asyncio.sleep(delay / 1000)
                        self._queue.extendleft(reversed(retry))  # the same items go first
                    else:
                        backoff.reset()
                batch = self._take()
                if not batch and not self._queue:
                    return
        except BaseException:
            for entry in [*batch, *self._queue]:
                entry.settle(Verdict("lease_lost"))  # never strand a waiting runner
            self._queue.clear()
            raise

    async def _send(self, batch: list[_Pending]) -> tuple[list[_Pending], float | None]:
        """Send one batch and settle its items; the items to re-send and a Retry-After."""
        items = [
            {"task_id": e.slot.ctx.id, "lease_id": e.slot.ctx.lease_id, "output": e.output}
            for e in batch
        ]
        try:
            answer = await _wire.complete(self.deps.client, items)
        except Orch8Error as exc:
            self.deps.observer.error("complete", exc)
            if is_outage(exc):
                self._outage = exc
                return batch, exc.retry_after_ms
            if len(batch) > 1:  # P-SDK-15: refused as a whole: halves, until items go alone
                subject = f"completion batch of {len(batch)}"
                self.deps.observer.call_failed("complete", exc, subject, "splitting it")
                half = len(batch) // 2
                first, after_first = await self._send(batch[:half])
                second, after_second = await self._send(batch[half:])
                return first + second, after_first or after_second
            self._refused(batch[0], exc.status, exc.code)
            return [], None
        retry: list[_Pending] = []
        by_id = {o.get("task_id"): o for o in answer}
        for entry in batch:
            got = by_id.get(entry.slot.ctx.id)
            if got is None:
                retry.append(entry)
            elif got.get("status") != "error":
                entry.settle(Verdict("completed"))
            else:
                problem = got.get("problem")
                problem = problem if isinstance(problem, dict) else {}
                status = problem.get("status")
                code = problem.get("code")
                if isinstance(status, int) and is_outage(status):
                    detail = str(problem.get("detail") or "")
                    self._outage = Orch8Error(detail, status=status, code=code or None)
                    retry.append(entry)
                else:
                    self._refused(entry, status if isinstance(status, int) else None, code)
        return retry, None

    def _refused(self, entry: _Pending, status: int | None, code: Any) -> None:
        """An item refused alone: lost, cancelled, or rejected for its own content."""
        code = code if isinstance(code, str) else None
        if code == "lease_lost":
            entry.slot.cancel("lease_lost")
            entry.settle(Verdict("lease_lost"))
        elif code == "task_cancelled":
            entry.slot.cancel("cancelled")
            entry.settle(Verdict("cancelled"))
        else:
            entry.settle(Verdict("rejected", status, code))

    def _keep_for_resend(self, batch: list[_Pending]) -> list[_Pending]:
        keep: list[_Pending] = []
        for entry in batch:
            ctx = entry.slot.ctx
            if entry.settled:
                continue
            if ctx.is_cancelled:
                entry.settle(Verdict(ctx.cancel_reason or "lease_lost"))
            elif lease_deadline_passed(ctx):
                cause = cause_text(self._outage) if self._outage else "outage"
                self.deps.observer.line(
                    ERROR,
                    "given_up",
                    "completion still undeliverable at the lease deadline; task given up as lease lost",
                    ctx,
                    cause,
                    operation="complete",
                )
                entry.settle(Verdict("given_up"))
            else:
                keep.append(entry)
        return keep
