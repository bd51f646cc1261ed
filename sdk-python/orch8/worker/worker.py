"""Worker: handlers by name, claiming for free slots, heartbeats, shutdown (P-SDK-3..11)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, TypeVar

from .._http import DEFAULT_WAIT_MS
from ..async_client import AsyncOrch8Client
from ..errors import PermanentError
from ..models import ClaimedTask
from ._execute import Completer, Handler, Slot
from ._loops import drain, heartbeat_loop, poll_loop, register_until_ok, run_slot
from .backoff import Backoff
from .context import TaskContext
from .observe import CompleteHook, FailHook, Observer, PollHook, StartHook, WorkerStats, log

H = TypeVar("H", bound=Handler)

DEFAULT_CONCURRENCY = 10  # P-SDK-3
DEFAULT_GRACE_PERIOD = 25.0  # P-SDK-7, seconds


def _default_worker_id() -> str:
    host = "".join(c if c.isalnum() or c in "-_.:@" else "-" for c in socket.gethostname())
    return f"{host or 'worker'}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class Worker:
    """Runs registered handlers for tasks claimed from an Orch8 server.

    Sync handlers run in a thread pool of `concurrency` threads, async handlers on the event
    loop. `run()` blocks until shutdown (SIGTERM/SIGINT, `stop()` or a terminate directive).
    """

    def __init__(
        self,
        client: AsyncOrch8Client | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        worker_id: str | None = None,
        queue_name: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        wait_ms: int = DEFAULT_WAIT_MS,
        lease_ms: int | None = None,
        grace_period: float = DEFAULT_GRACE_PERIOD,
        heartbeat_interval: float | None = None,
        labels: dict[str, str] | None = None,
        handle_signals: bool = True,
        outage_backoff: tuple[float, float] = (0.5, 30.0),
        executor: Executor | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._client_arg = client
        self._base_url = base_url
        self._api_key = api_key
        self.worker_id = worker_id or _default_worker_id()
        self.queue_name = queue_name
        self.concurrency = concurrency
        self.wait_ms = wait_ms
        self.lease_ms = lease_ms
        self.grace_period = grace_period
        # None: the server's heartbeat_interval_ms (P-SDK-4); a number overrides it (seconds).
        self.heartbeat_interval = heartbeat_interval
        self.labels = dict(labels or {})
        self.handle_signals = handle_signals
        self.outage_backoff = outage_backoff
        self._executor_arg = executor
        self._handlers: dict[str, Handler] = {}
        self.observer = Observer(self.worker_id)
        # Runtime state, valid while running (all touched on the loop thread only).
        self.client: AsyncOrch8Client | None = None
        self.executor: Executor | None = None
        self.completer: Completer | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.held: dict[str, Slot] = {}
        self.superseded: set[Slot] = set()
        self.stopping: asyncio.Event | None = None
        self.wake: asyncio.Event | None = None
        self.interrupt = asyncio.Event()  # aborts an in-flight long-poll
        self.local_quiet = False
        self.server_quiet = False
        self._stop_requested = False

    # --- handlers and hooks ----------------------------------------------------------------

    def handler(self, name: str) -> Callable[[H], H]:
        """Decorator: `@worker.handler("process_image")`."""

        def decorate(fn: H) -> H:
            self.register(name, fn)
            return fn

        return decorate

    def register(self, name: str, fn: Handler) -> None:
        """Register `fn(ctx)` for tasks whose handler_name is `name`."""
        if not callable(fn):
            raise TypeError(f"handler for {name!r} is not callable")
        self._handlers[name] = fn

    @property
    def handler_names(self) -> Sequence[str]:
        return sorted(self._handlers)

    def on_poll(self, hook: PollHook) -> PollHook:
        self.observer.on_poll.append(hook)
        return hook

    def on_task_started(self, hook: StartHook) -> StartHook:
        self.observer.on_task_started.append(hook)
        return hook

    def on_task_completed(self, hook: CompleteHook) -> CompleteHook:
        self.observer.on_task_completed.append(hook)
        return hook

    def on_task_failed(self, hook: FailHook) -> FailHook:
        self.observer.on_task_failed.append(hook)
        return hook

    def stats(self) -> WorkerStats:
        """Counters (P-SDK-11); `in_flight` is the number of tasks held right now."""
        return self.observer.snapshot(len(self.held) + len(self.superseded))

    # --- control (thread-safe) -------------------------------------------------------------

    def _call_on_loop(self, fn: Callable[[], None]) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            fn()
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            fn()
        else:
            loop.call_soon_threadsafe(fn)

    def stop(self) -> None:
        """Begin graceful shutdown (P-SDK-7); safe from any thread or signal handler."""
        self._call_on_loop(lambda: self.request_stop("stop() called"))

    def quiet(self) -> None:
        """Stop claiming; in-flight work finishes (P-SDK-8, like SIGTSTP)."""
        self._call_on_loop(lambda: self._set_local_quiet(True))

    def resume(self) -> None:
        """Claim again after `quiet()` (P-SDK-8, like SIGCONT)."""
        self._call_on_loop(lambda: self._set_local_quiet(False))

    def _set_local_quiet(self, quiet: bool) -> None:
        self.local_quiet = quiet
        if quiet:
            self.interrupt_poll()
        log.info("worker quiet" if quiet else "worker resumed", extra=self.observer.extra())
        self.poke()

    def request_stop(self, why: str) -> None:
        if self._stop_requested:
            return
        self._stop_requested = True
        log.info("worker stopping", extra=self.observer.extra(reason=why))
        if self.stopping is not None:
            self.stopping.set()
        self.interrupt_poll()
        self.poke()

    def interrupt_poll(self) -> None:
        self.interrupt.set()

    def poke(self) -> None:
        """Wake the poll loop to re-check free slots and directives."""
        if self.wake is not None:
            self.wake.set()

    @property
    def claiming(self) -> bool:
        """Claim only when running and neither locally nor server quiet (P-SDK-8)."""
        return not self._stop_requested and not self.local_quiet and not self.server_quiet

    @property
    def state(self) -> str:
        """The state reported in worker heartbeats."""
        if self._stop_requested:
            return "terminating"
        return "quiet" if self.local_quiet or self.server_quiet else "running"

    def new_backoff(self) -> Backoff:
        return Backoff(*self.outage_backoff)

    # --- claimed tasks ---------------------------------------------------------------------

    def start_task(self, claimed: ClaimedTask) -> None:
        """Turn a claimed task into a running slot."""
        assert self.client is not None and self.loop is not None
        ctx = TaskContext(
            id=claimed.id,
            handler_name=claimed.handler_name,
            queue_name=claimed.queue_name,
            params=claimed.params.to_dict(),
            context=claimed.context.to_dict(),
            headers=dict(claimed.headers.to_dict()),
            attempt=claimed.attempt,
            max_attempts=claimed.max_attempts,
            lease_id=claimed.lease.id,
            lease_expires_at=claimed.lease.expires_at,
            checkpoint=claimed.checkpoint.to_dict() if claimed.checkpoint is not None else None,
            worker_id=self.worker_id,
        )
        ctx._bind(self.client, self.loop)
        previous = self.held.pop(claimed.id, None)
        if previous is not None:
            # The server handed us a new lease on a task we still hold: the old one is gone.
            previous.cancel("lease_lost")
            self.superseded.add(previous)
        handler = self._handlers.get(claimed.handler_name) or _no_handler
        slot = Slot(ctx=ctx, handler=handler)
        self.held[claimed.id] = slot
        slot.runner = asyncio.ensure_future(run_slot(self, slot))

    def release_slot(self, slot: Slot) -> None:
        if self.held.get(slot.ctx.id) is slot:
            del self.held[slot.ctx.id]
        self.superseded.discard(slot)
        self.poke()

    # --- running ---------------------------------------------------------------------------

    def run(self) -> None:
        """Run until shutdown; installs SIGTERM/SIGINT/SIGTSTP/SIGCONT handlers if asked."""
        asyncio.run(self.run_async())

    async def run_async(self) -> None:
        """Run on the current event loop until shutdown."""
        if not self._handlers:
            raise ValueError("register at least one handler before running the worker")
        self.loop = asyncio.get_running_loop()
        self.stopping = asyncio.Event()
        self.wake = asyncio.Event()
        self.interrupt = asyncio.Event()
        if self._stop_requested:
            self.stopping.set()
        own_client = self._client_arg is None
        self.client = self._client_arg or AsyncOrch8Client(self._base_url, self._api_key)
        self.executor = self._executor_arg or ThreadPoolExecutor(
            max_workers=self.concurrency, thread_name_prefix=f"orch8-{self.worker_id}"
        )
        self.completer = Completer(self.client, self.observer, self.new_backoff)
        installed = self._install_signals() if self.handle_signals else []
        heartbeats: asyncio.Task[None] | None = None
        registered = False
        try:
            interval = await register_until_ok(self)
            registered = interval is not None
            if registered:
                heartbeats = asyncio.ensure_future(heartbeat_loop(self, interval or 5.0))
                await poll_loop(self)
            await drain(self)
        finally:
            if heartbeats is not None:
                heartbeats.cancel()
                await asyncio.gather(heartbeats, return_exceptions=True)
            await self.completer.aclose()  # results in flight land before deregistering
            if registered:
                await self._deregister()
            for sig in installed:
                self.loop.remove_signal_handler(sig)
            if self._executor_arg is None:
                self.executor.shutdown(wait=False, cancel_futures=True)
            if own_client:
                await self.client.aclose()
            log.info("worker stopped", extra=self.observer.extra(None, **self.stats().as_dict()))

    async def _deregister(self) -> None:
        assert self.client is not None
        try:
            await self.client.deregister_worker(self.worker_id)
        except Exception as exc:  # best effort: the server declares us dead anyway
            log.warning("deregister failed", extra=self.observer.extra(error=str(exc)))

    def _install_signals(self) -> list[int]:
        """P-SDK-7 / P-SDK-8 signal handling; only possible on the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return []
        assert self.loop is not None
        actions: dict[str, Callable[[], None]] = {
            "SIGTERM": lambda: self.request_stop("SIGTERM"),
            "SIGINT": lambda: self.request_stop("SIGINT"),
            "SIGTSTP": lambda: self._set_local_quiet(True),
            "SIGCONT": lambda: self._set_local_quiet(False),
        }
        installed = []
        for name, action in actions.items():
            sig = getattr(signal, name, None)
            if sig is None:
                continue
            try:
                self.loop.add_signal_handler(sig, action)
            except (NotImplementedError, RuntimeError, ValueError):
                continue
            installed.append(sig)
        return installed


def _no_handler(ctx: TaskContext) -> Any:
    # Cannot happen for tasks we polled for by name; guards against a mis-set server.
    raise PermanentError(f"no handler registered for {ctx.handler_name!r}", code="no_handler")
