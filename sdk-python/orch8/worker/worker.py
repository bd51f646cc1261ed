"""Worker: configuration, handlers, hooks and control (protocol section 14).

The run state lives in `_runtime.Runtime`, created by `run_async()`; the loops are in
`_loops.py`. Durations are integer milliseconds (`_ms`); the float-second keywords of 0.1
are still accepted with a DeprecationWarning.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import threading
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any, TypeVar

from .._http import DEFAULT_WAIT_MS, check_tenant, resolve_base_url
from .._units import ms_option
from ..async_client import AsyncOrch8Client
from ..telemetry import Telemetry
from ._drain import drain
from ._execute import Handler
from ._health import serve_health
from ._lean_http import LeanTransport, usable_for
from ._logs import INFO, WARNING
from ._loops import SHUTDOWN_STEP_S, heartbeat_loop, poll_loop, register_until_ok, run_slot
from ._pool import DaemonPool
from ._queues import select_queues
from ._runtime import Runtime, Settings
from ._runtime import poll_threshold as poll_threshold_for
from .observe import Observer, WorkerStats

H = TypeVar("H", bound=Handler)
F = TypeVar("F", bound=Callable[[Any], Any])
G = TypeVar("G", bound=Callable[..., Any])

DEFAULT_CONCURRENCY = 10  # P-SDK-3
DEFAULT_GRACE_PERIOD_MS = 25_000  # P-SDK-7
DEFAULT_OUTAGE_BACKOFF_MS = (500, 30_000)  # P-SDK-9: first delay, cap


def default_worker_id() -> str:
    """P-SDK-21: `<hostname>-<pid>-<8 lowercase hex>`."""
    host = "".join(c if c.isalnum() or c in "-_.:@" else "-" for c in socket.gethostname())
    return f"{host or 'worker'}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


class Worker:
    """Runs registered handlers for tasks claimed from an Orch8 server.

    Sync handlers run in a pool of `concurrency` threads, async handlers on the event loop.
    It claims from one queue (`queue_name`) or an ordered list (`queue_names`, optionally
    weighted by `queue_weights`, P-SDK-23). `run()` blocks until shutdown (SIGTERM/SIGINT, `stop()` or a terminate directive).
    `telemetry` (e.g. `orch8.otel.OpenTelemetry()`) adds spans and metrics (P-TEL-3/4);
    `health_port` serves `GET /health` on 127.0.0.1 (P-TEL-5; 0 picks a free port, read
    `health_address`). Both are off by default. `poll_threshold` is how many free slots a poll
    waits for while results are being reported (P-SDK-26; default half of
    min(concurrency, 100), rounded up). `base_url`, `api_key` and `tenant` build the
    worker's own client when none is given (`tenant` is sent as `X-Tenant-Id`, P-SDK-24).
    """

    def __init__(
        self,
        client: AsyncOrch8Client | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        worker_id: str | None = None,
        queue_name: str | None = None,
        queue_names: Sequence[str] | None = None,
        queue_weights: Mapping[str, int] | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        poll_threshold: int | None = None,
        wait_ms: int = DEFAULT_WAIT_MS,
        lease_ms: int | None = None,
        grace_period_ms: int | None = None,
        heartbeat_interval_ms: int | None = None,
        labels: dict[str, str] | None = None,
        handle_signals: bool = True,
        outage_backoff_ms: tuple[int, int] | None = None,
        executor: Executor | None = None,
        grace_period: float | None = None,
        heartbeat_interval: float | None = None,
        outage_backoff: tuple[float, float] | None = None,
        telemetry: Telemetry | None = None,
        health_port: int | None = None,
        tenant: str | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._client_arg = client
        self._base_url = base_url
        self._api_key = api_key
        if client is not None and tenant is not None:
            # A tenant silently dropped would act in another tenant: say where it belongs.
            raise ValueError("tenant is an option of the client: pass it to AsyncOrch8Client")
        self.tenant = check_tenant(tenant)  # P-SDK-24: refused before any request
        if client is None:
            resolve_base_url(base_url)  # P-SDK-1: a bad URL is refused here, not retried
        self.worker_id = worker_id or default_worker_id()
        # P-SDK-23: one queue, or an ordered list with optional weights; refused here, before
        # any request, with a ValueError naming the option.
        select_queues(queue_name, queue_names, queue_weights)
        self.queue_name = queue_name
        self.queue_names = None if queue_names is None else list(queue_names)
        self.queue_weights = None if queue_weights is None else dict(queue_weights)
        self.concurrency = concurrency
        poll_threshold_for(concurrency, poll_threshold)  # P-SDK-26: refused here when < 1
        self.poll_threshold = poll_threshold
        self.wait_ms = wait_ms
        self.lease_ms = lease_ms
        self.grace_period_ms: int = ms_option(
            "Worker",
            "grace_period_ms",
            grace_period_ms,
            "grace_period",
            grace_period,
            DEFAULT_GRACE_PERIOD_MS,
        )
        # None: the server's heartbeat_interval_ms (P-SDK-4); a number overrides it.
        self.heartbeat_interval_ms: int | None = ms_option(
            "Worker",
            "heartbeat_interval_ms",
            heartbeat_interval_ms,
            "heartbeat_interval",
            heartbeat_interval,
            None,
        )
        self.outage_backoff_ms: tuple[int, int] = ms_option(
            "Worker",
            "outage_backoff_ms",
            outage_backoff_ms,
            "outage_backoff",
            outage_backoff,
            DEFAULT_OUTAGE_BACKOFF_MS,
        )
        self.labels = dict(labels or {})
        self.handle_signals = handle_signals
        self._executor_arg = executor
        self.telemetry = telemetry
        self.health_port = health_port
        self._health_address: tuple[str, int] | None = None
        self._handlers: dict[str, Handler] = {}
        self.observer = Observer(self.worker_id)
        self._runtime: Runtime | None = None
        self._stop_early = False  # stop() before the runtime exists
        self._quiet_early = False

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
        """The registered handler names, sorted."""
        return sorted(self._handlers)

    def _hook(self, name: str, fn: F) -> F:
        self.observer.hooks[name].append(fn)
        return fn

    def on_poll(self, fn: F) -> F:
        """Hook (decorator): `fn(PollEvent)` after each answered poll (P-SDK-11)."""
        return self._hook("poll", fn)

    def on_task_start(self, fn: F) -> F:
        """Hook (decorator): `fn(TaskStartEvent)` before a handler runs."""
        return self._hook("task_start", fn)

    def on_task_complete(self, fn: F) -> F:
        """Hook (decorator): `fn(TaskCompleteEvent)` once the server took the completion."""
        return self._hook("task_complete", fn)

    def on_task_fail(self, fn: F) -> F:
        """Hook (decorator): `fn(TaskFailEvent)` once the server took the failure."""
        return self._hook("task_fail", fn)

    def on_task_abandoned(self, fn: F) -> F:
        """Hook (decorator): `fn(TaskAbandonedEvent)` when a task is given up unreported."""
        return self._hook("task_abandoned", fn)

    def on_error(self, fn: F) -> F:
        """Hook (decorator): `fn(ErrorEvent)` for every failed call the worker makes."""
        return self._hook("error", fn)

    def _deprecated_hook(self, old: str, name: str, fn: G, adapt: Callable[[Any], Any]) -> G:
        warnings.warn(
            f"Worker.{old} is deprecated; use Worker.on_{name} (one event argument)",
            DeprecationWarning,
            stacklevel=3,
        )
        self.observer.hooks[name].append(adapt)
        return fn

    def on_task_started(self, fn: G) -> G:
        """Deprecated: `on_task_start`; `fn(ctx)`."""
        return self._deprecated_hook("on_task_started", "task_start", fn, lambda e: fn(e.task))

    def on_task_completed(self, fn: G) -> G:
        """Deprecated: `on_task_complete`; `fn(ctx, None)` (the output is no longer passed)."""
        adapt = lambda e: fn(e.task, None)  # noqa: E731
        return self._deprecated_hook("on_task_completed", "task_complete", fn, adapt)

    def on_task_failed(self, fn: G) -> G:
        """Deprecated: `on_task_fail`; `fn(ctx, code)`."""
        adapt = lambda e: fn(e.task, e.code)  # noqa: E731
        return self._deprecated_hook("on_task_failed", "task_fail", fn, adapt)

    @property
    def state(self) -> str:
        """`running`, `quiet` (local or operator, P-SDK-18), `terminating` or `stopped`."""
        rt = self._runtime
        return "stopped" if rt is None else rt.state

    @property
    def health_address(self) -> tuple[str, int] | None:
        """`(host, port)` of the health endpoint while it listens (P-TEL-5), else None."""
        return self._health_address

    def stats(self) -> WorkerStats:
        """Counters (P-SDK-11); `in_flight` is the number of tasks held right now."""
        return self.observer.snapshot()

    # --- control (thread-safe) -------------------------------------------------------------

    def _on_loop(self, fn: Callable[[Runtime], None]) -> bool:
        """Run `fn(runtime)` on the worker's loop; False when the worker is not running."""
        rt = self._runtime
        if rt is None or rt.loop.is_closed():
            return False
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is rt.loop:
            fn(rt)
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                rt.loop.call_soon_threadsafe(fn, rt)
        return True

    def stop(self) -> None:
        """Begin graceful shutdown (P-SDK-7); safe from any thread or signal handler."""
        if not self._on_loop(lambda rt: rt.request_stop("stop() called")):
            self._stop_early = True

    def quiet(self) -> None:
        """Stop claiming; in-flight work finishes (P-SDK-8, like SIGTSTP)."""
        if not self._on_loop(lambda rt: rt.set_local_quiet(True)):
            self._quiet_early = True

    def resume(self) -> None:
        """Claim again after `quiet()` (P-SDK-8, like SIGCONT); not an operator's quiet."""
        if not self._on_loop(lambda rt: rt.set_local_quiet(False)):
            self._quiet_early = False

    # --- running ---------------------------------------------------------------------------

    def run(self) -> None:
        """Run until shutdown; installs SIGTERM/SIGINT/SIGTSTP/SIGCONT handlers if asked."""
        asyncio.run(self.run_async())

    async def run_async(self) -> None:
        """Run on the current event loop until shutdown."""
        if not self._handlers:
            raise ValueError("register at least one handler before running the worker")
        settings = Settings(
            worker_id=self.worker_id,
            # Read again here: the options are public attributes, as queue_name always was.
            queues=select_queues(self.queue_name, self.queue_names, self.queue_weights),
            concurrency=self.concurrency,
            poll_threshold=poll_threshold_for(self.concurrency, self.poll_threshold),
            wait_ms=self.wait_ms,
            lease_ms=self.lease_ms,
            grace_period_ms=self.grace_period_ms,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            labels=self.labels,
            outage_backoff_ms=self.outage_backoff_ms,
        )
        own_client = self._client_arg is None
        # Its own client sends over LeanTransport when it can (plain http, no proxy): the same
        # requests at a fraction of httpcore's CPU (orch8/worker/_lean_http.py).
        url = resolve_base_url(self._base_url)
        client = self._client_arg or AsyncOrch8Client(
            url,
            self._api_key,
            tenant=self.tenant,
            transport=LeanTransport() if usable_for(url) else None,
        )
        executor = self._executor_arg or DaemonPool(
            self.concurrency, thread_name_prefix=f"orch8-{self.worker_id}"
        )
        telemetry = (
            None
            if self.telemetry is None
            else self.telemetry.worker(self.worker_id, self.concurrency)
        )
        rt = Runtime(settings, self._handlers, self.observer, client, executor, telemetry)
        self._runtime = rt
        self.observer.url = client.config.base_url
        self.observer.line(
            INFO,
            "start",
            f"worker starting against {client.config.base_url}",
            url=client.config.base_url,
            handlers=rt.handler_names,
            queues=settings.queues.registered,
            concurrency=settings.concurrency,
        )
        health = None if self.health_port is None else await serve_health(rt, self.health_port)
        if health is not None:
            host, port = health.sockets[0].getsockname()[:2]
            self._health_address = (host, port)
            addr = f"http://{host}:{port}/health"
            self.observer.line(INFO, "health", f"health endpoint on {addr}", addr=addr)
        if self._stop_early:
            rt.request_stop("stop() called before run")
        rt.local_quiet = self._quiet_early
        installed = self._install_signals(rt) if self.handle_signals else []
        heartbeats: asyncio.Task[None] | None = None
        registered = False
        try:
            interval_ms = await register_until_ok(rt)
            registered = interval_ms is not None
            if interval_ms is not None:
                heartbeats = asyncio.ensure_future(heartbeat_loop(rt, interval_ms))
                await poll_loop(rt, lambda slot: run_slot(rt, slot))
            await drain(rt)
        finally:
            if heartbeats is not None:
                heartbeats.cancel()
                await asyncio.gather(heartbeats, return_exceptions=True)
            await self._finish(rt, registered)
            for sig in installed:
                rt.loop.remove_signal_handler(sig)
            if self._executor_arg is None:
                executor.shutdown(wait=False, cancel_futures=True)
            if own_client:
                await client.aclose()
            if health is not None:
                health.close()
                self._health_address = None
                await health.wait_closed()
            self._runtime = None
            self.observer.line(INFO, "stopped", "worker stopped", stats=self.stats().as_dict())

    async def _finish(self, rt: Runtime, registered: bool) -> None:
        """Results in flight land, then deregister; bounded so shutdown ends (P-SDK-17)."""
        budget = SHUTDOWN_STEP_S
        try:
            await asyncio.wait_for(rt.completer.aclose(), budget)
        except asyncio.TimeoutError:
            self.observer.line(
                WARNING,
                "outage",
                "completions still in flight when the worker stopped",
                None,
                f"no answer within {budget} s",
                operation="complete",
                url=self.observer.url,
            )
        if not registered:
            return
        try:
            await asyncio.wait_for(rt.client.deregister_worker(self.worker_id), budget)
        except Exception as exc:  # best effort: the server declares us dead anyway
            self.observer.error("deregister", exc)
            self.observer.call_failed("deregister", exc, "deregister")

    def _install_signals(self, rt: Runtime) -> list[int]:
        """P-SDK-7 / P-SDK-8 / P-SDK-17 signal handling; only possible on the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return []
        actions: dict[str, Callable[[], None]] = {
            "SIGTERM": lambda: rt.signal_stop("SIGTERM"),
            "SIGINT": lambda: rt.signal_stop("SIGINT"),
            "SIGTSTP": lambda: rt.set_local_quiet(True),
            "SIGCONT": lambda: rt.set_local_quiet(False),
        }
        installed = []
        for name, action in actions.items():
            sig = getattr(signal, name, None)
            if sig is None:
                continue
            try:
                rt.loop.add_signal_handler(sig, action)
            except (NotImplementedError, RuntimeError, ValueError):
                continue
            installed.append(sig)
        return installed
