"""The run state of one `Worker.run()`: ONE private object (issue 19).

`Worker` keeps configuration, handlers, hooks and control methods; everything that exists
only while the worker runs (client, thread pool, held tasks, quiet flags, events) lives
here. The loops in `_loops.py` receive this object through narrow Protocols.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from ..async_client import AsyncOrch8Client
from ..errors import PermanentError
from ..models import ClaimedTask
from ..telemetry import WorkerTelemetry
from . import _wire
from ._completer import Completer
from ._execute import NO_HANDLER, Handler, Slot
from ._logs import INFO, WARNING
from ._queues import QueueSelection
from .backoff import Backoff
from .context import TaskContext
from .observe import Observer

MAX_BATCH_SIZE = 100  # P-SDK-13: the contract's maximum batch_size
MAX_HANDLER_NAMES = 50  # P-SDK-13: the contract's maximum handler_names per poll
MIN_HEARTBEAT_MS = 100  # P-SDK-30: however short a lease, at most one heartbeat per 100 ms


def lease_heartbeat_ms(interval_ms: float, lease_ms: float) -> float:
    """P-SDK-30: how often a held task with this lease needs a worker heartbeat.

    A third of the lease, so each lease sees at least three heartbeats, never more often
    than every 100 ms, and never less often than the server's interval (P-SDK-4).
    """
    return min(interval_ms, max(lease_ms / 3, MIN_HEARTBEAT_MS))


def poll_threshold(concurrency: int, given: int | None = None) -> int:
    """P-SDK-26: half of min(concurrency, 100), rounded up, unless given (capped to it)."""
    most = min(concurrency, MAX_BATCH_SIZE)
    if given is None:
        return (most + 1) // 2
    if given < 1:
        raise ValueError("poll_threshold must be at least 1")
    return min(given, most)


@dataclass(frozen=True)
class Settings:
    """The configuration the loops read, resolved from the Worker's options."""

    worker_id: str
    queues: QueueSelection  # one queue or an ordered list with weights (P-SDK-23)
    concurrency: int
    poll_threshold: int  # P-SDK-26: free slots a poll waits for while results are reported
    wait_ms: int
    lease_ms: int | None
    grace_period_ms: int
    heartbeat_interval_ms: int | None
    labels: dict[str, str]
    outage_backoff_ms: tuple[int, int]


class Runtime:
    """State of a running worker; touched on the event loop thread only."""

    def __init__(
        self,
        settings: Settings,
        handlers: dict[str, Handler],
        observer: Observer,
        client: AsyncOrch8Client,
        executor: Executor,
        telemetry: WorkerTelemetry | None = None,
    ) -> None:
        self.settings = settings
        self.handlers = dict(handlers)
        self.observer = observer
        self.client = client
        self.executor = executor
        self.telemetry = telemetry  # None: no telemetry call is made at all (section 15)
        self.loop = asyncio.get_running_loop()
        self.completer = Completer(self)
        self.held: dict[str, Slot] = {}
        self.superseded: set[Slot] = set()
        self.handed = 0  # P-SDK-3: held slots whose completion is with the completer
        self.stopping = asyncio.Event()
        self.end_grace = asyncio.Event()  # P-SDK-17: a second signal ends the grace period
        self.second_signal: str | None = None  # its name, for the shutdown message (P-SDK-29)
        self.wake = asyncio.Event()
        self.interrupt = asyncio.Event()  # aborts an in-flight long-poll
        self.local_quiet = False  # SIGTSTP / quiet()          (P-SDK-18)
        self.server_quiet = False  # the operator's directive    (P-SDK-18)
        self.stop_requested = False
        self._chunk = 0
        # P-TEL-5: what the health endpoint reports (wall-clock seconds; None before success).
        self.started_at = time.time()
        self.last_poll_at: float | None = None
        self.last_heartbeat_at: float | None = None
        self.heartbeat_interval_ms = settings.heartbeat_interval_ms or 5000
        # P-SDK-30: the loop time the heartbeat loop sleeps until, and the event that wakes
        # it early when a task with a short lease is claimed meanwhile.
        self.heartbeat_due = math.inf
        self.heartbeat_wake = asyncio.Event()

    # --- identity and limits -------------------------------------------------------------

    @property
    def worker_id(self) -> str:
        return self.settings.worker_id

    @property
    def handler_names(self) -> list[str]:
        return sorted(self.handlers)

    def handler_chunk(self) -> list[str]:
        """P-SDK-13: at most 50 names per poll; with more, the chunks take turns."""
        names = self.handler_names
        chunks = [names[i : i + MAX_HANDLER_NAMES] for i in range(0, len(names), MAX_HANDLER_NAMES)]
        chunk = chunks[self._chunk % len(chunks)]
        self._chunk = (self._chunk + 1) % len(chunks)
        return chunk

    def free_slots(self) -> int:
        """P-SDK-3: a completion handed to the completer frees its slot, so the next poll
        overlaps with reporting; at most `concurrency` of them do (bounded unsent results)."""
        concurrency = self.settings.concurrency
        taken = len(self.held) + len(self.superseded) - min(self.handed, concurrency)
        return concurrency - taken

    def gathering(self) -> bool:
        """P-SDK-26: wait for the slots of results being reported rather than poll for few."""
        if self.free_slots() >= self.settings.poll_threshold:
            return False
        return any(slot.delivering for slot in self.held.values())

    def batch_size(self) -> int:
        """P-SDK-13: min(free slots, 100); the rest is claimed by the next poll."""
        return min(self.free_slots(), MAX_BATCH_SIZE)

    def new_backoff(self) -> Backoff:
        return Backoff(*self.settings.outage_backoff_ms)

    # --- control -------------------------------------------------------------------------

    @property
    def claiming(self) -> bool:
        """P-SDK-18: claim only when running and neither local nor operator quiet is set."""
        return not self.stop_requested and not self.local_quiet and not self.server_quiet

    @property
    def state(self) -> str:
        """The state reported in worker heartbeats."""
        if self.stop_requested:
            return "terminating"
        return "quiet" if self.local_quiet or self.server_quiet else "running"

    def request_stop(self, why: str) -> None:
        if self.stop_requested:
            return
        self.stop_requested = True
        grace_ms = self.settings.grace_period_ms
        self.observer.line(
            INFO, "stopping", f"worker stopping: {why}", reason=why, grace_period_ms=grace_ms
        )
        self.stopping.set()
        self.interrupt.set()
        self.wake.set()

    def signal_stop(self, name: str) -> None:
        """SIGTERM/SIGINT: the first stops gracefully, a second ends the grace period (P-SDK-17).

        P-SDK-29: the first is logged at info (by request_stop), the second at warning.
        """
        if self.stop_requested:
            if self.second_signal is None:
                self.second_signal = name
            message = f"received a second signal {name}: ending the grace period now"
            self.observer.line(WARNING, "second_signal", message, signal=name)
            self.end_grace.set()
            return
        grace_ms = self.settings.grace_period_ms
        message = f"received {name}: shutting down, running tasks get {grace_ms} ms"
        self.observer.line(INFO, "signal", message, signal=name, grace_period_ms=grace_ms)
        self.request_stop(f"received {name}")

    def set_local_quiet(self, quiet: bool) -> None:
        """SIGTSTP / quiet() and SIGCONT / resume(): only the local flag (P-SDK-18)."""
        if quiet != self.local_quiet:  # logged on a change only (a SIGCONT after SIGSTOP is none)
            message = "claiming paused (local quiet)" if quiet else "claiming resumed (local)"
            self.observer.line(INFO, "local_quiet", message, quiet=quiet)
        self.local_quiet = quiet
        if quiet:
            self.interrupt.set()
        self.wake.set()

    def apply_directive(self, directive: str) -> None:
        """P-WORKER-3 / P-SDK-18: `quiet` and `running` touch only the operator flag."""
        if directive == "terminate":  # wins over both quiet flags
            if not self.stop_requested:
                self.observer.line(INFO, "directive", "directive terminate", directive=directive)
            self.request_stop("terminate directive")
            return
        quiet = directive == "quiet"
        if quiet != self.server_quiet:
            self.server_quiet = quiet
            if quiet:
                self.interrupt.set()
            self.observer.line(INFO, "directive", f"directive {directive}", directive=directive)
            self.wake.set()

    # --- held tasks ----------------------------------------------------------------------

    def start_task(
        self,
        claimed: dict[str, Any],
        run: Callable[[Slot], Any],
        poll: object = None,
        model: ClaimedTask | None = None,
        received_at: float | None = None,
    ) -> None:
        """Turn a claimed task (a ClaimedTask of the poll answer, as JSON) into a running
        slot; `run(slot)` is its coroutine.

        `poll` is what telemetry returned for the poll that claimed it (the receive span),
        `model` the typed ClaimedTask telemetry reads (parsed only when telemetry is on),
        `received_at` the wall-clock time its poll answer arrived (P-SDK-30; now if None).
        """
        lease = claimed["lease"]
        checkpoint = claimed["checkpoint"]
        ctx = TaskContext(  # P-SDK-10: the same values the generated model would give
            id=claimed["id"],
            handler_name=claimed["handler_name"],
            queue_name=claimed["queue_name"],
            params=claimed["params"],
            context=claimed["context"],
            headers=claimed["headers"],
            attempt=claimed["attempt"],
            max_attempts=claimed["max_attempts"],
            lease_id=lease["id"],
            lease_expires_at=_wire.timestamp(lease["expires_at"]),
            checkpoint=checkpoint if isinstance(checkpoint, dict) else None,
            worker_id=self.worker_id,
        )
        ctx._bind(self.client, self.loop)
        if self.telemetry is not None:  # P-TEL-3: the process span starts at the claim
            ctx._telemetry = self.telemetry.task_started(
                model if model is not None else ClaimedTask.from_dict(claimed), poll
            )
        previous = self.held.pop(ctx.id, None)
        if previous is not None:
            # The server handed us a new lease on a task we still hold: the old one is gone.
            previous.cancel("lease_lost")
            self.superseded.add(previous)
        handler = self.handlers.get(ctx.handler_name) or self._no_handler(ctx.handler_name)
        deadline = claimed.get("good_until")
        good_until = _wire.timestamp(deadline) if isinstance(deadline, str) else None
        slot = Slot(ctx=ctx, handler=handler, good_until=good_until)
        self._pace_heartbeats(slot, time.time() if received_at is None else received_at)
        self.held[ctx.id] = slot
        if self.telemetry is not None:  # P-TEL-4: in_flight and free slots
            self.telemetry.held(1, self.free_slots())
        slot.runner = asyncio.ensure_future(run(slot))

    def _pace_heartbeats(self, slot: Slot, received_at: float) -> None:
        """P-SDK-30: keep the task's lease length (computed once, at the claim) and wake the
        heartbeat loop when this task needs its first heartbeat before the loop's next one.
        """
        expires_at = slot.ctx.lease_expires_at.timestamp()
        slot.lease_ms = max(0.0, (expires_at - received_at) * 1000)
        slot.claimed_at = self.loop.time()
        period_ms = lease_heartbeat_ms(self.heartbeat_interval_ms, slot.lease_ms)
        if slot.claimed_at + period_ms / 1000 < self.heartbeat_due:
            self.heartbeat_wake.set()

    def _no_handler(self, name: str) -> Handler:
        """P-SDK-14: a permanent `no_handler` failure naming the handlers this worker has."""
        known = self.handler_names

        async def no_handler(ctx: TaskContext) -> Any:
            raise PermanentError(
                f"no handler registered for {name!r}",
                code=NO_HANDLER,
                details={"handler_name": name, "known_handlers": known},
            )

        return no_handler

    def hand_over(self, slot: Slot) -> None:
        """P-SDK-3: the slot's completion goes to the completer; its slot frees up now."""
        if not slot.handed:
            slot.handed = True
            self.handed += 1
            self.wake.set()

    def release_slot(self, slot: Slot) -> None:
        if slot.handed:
            slot.handed = False
            self.handed -= 1
        if self.held.get(slot.ctx.id) is slot:
            del self.held[slot.ctx.id]
        self.superseded.discard(slot)
        if self.telemetry is not None:
            self.telemetry.held(-1, self.free_slots())
        self.wake.set()

    def slots(self) -> Sequence[Slot]:
        return [*self.held.values(), *self.superseded]
