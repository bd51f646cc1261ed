"""A throwaway reference server with its test clock, for workflow tests (P-CLOCK-1..5).

    from orch8.testing import TestServer

    with TestServer() as server:
        worker = server.worker()
        worker.register("nap_then_wake", wake)
        instance = server.client.start_instance("nap", input={})
        done = server.run_until_final(worker, instance_id=instance.id)  # the hour is skipped

The server is `orch8-server --test-clock` on a SQLite file in a temp directory and port 0;
its listening line gives the URL. It is found through `ORCH8_SERVER` (a command), then
`orch8-server` on PATH, then `python -m orch8_server` when that package is importable.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, overload

from ._generated.models import Clock, Instance, Task
from .client import Orch8Client
from .waiting import INSTANCE_FINAL, TASK_FINAL
from .worker import Worker
from .worker._queues import select_queues

__all__ = ["ServerNotFoundError", "TestServer"]

LISTENING_LINE = re.compile(r"^orch8-server listening on (http://\S+)$")
POLL_S = 0.01  # how often the helper looks at the worker and the server while it waits


class ServerNotFoundError(RuntimeError):
    """No reference server command was found; the message says where it looked."""


def server_command() -> list[str]:
    """The command that starts the reference server: ORCH8_SERVER, PATH, then this Python."""
    given = os.environ.get("ORCH8_SERVER", "").strip()
    if given:
        try:
            return shlex.split(given)
        except ValueError as exc:  # an unclosed quote, as the other SDKs say it
            raise ValueError(f"ORCH8_SERVER={given!r}: unclosed quote ({exc})") from None
    on_path = shutil.which("orch8-server")
    if on_path:
        return [on_path]
    if importlib.util.find_spec("orch8_server") is not None:
        return [sys.executable, "-m", "orch8_server"]
    raise ServerNotFoundError(
        "orch8.testing.TestServer needs the Orch8 reference server and found none: "
        "ORCH8_SERVER is not set, `orch8-server` is not on PATH and `python -m orch8_server` "
        f"is not importable by {sys.executable}. Install it with `pip install orch8-server` "
        "or set ORCH8_SERVER to the command that starts it."
    )


class TestServer:
    """`orch8-server --test-clock` for one test; a context manager (leaving it stops it)."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self, *server_args: str, timeout_ms: int = 30_000) -> None:
        """`server_args` are extra server flags (`"--lease-ms", "5000"`)."""
        found = server_command()
        self._tmpdir = tempfile.mkdtemp(prefix="orch8-test-server-")
        self.log_path = Path(self._tmpdir) / "server.log"
        self._workers: list[_Running] = []
        command = [
            *found,
            "--test-clock",
            "--db",
            str(Path(self._tmpdir) / "orch8.db"),
            "--host",
            "127.0.0.1",
            *server_args,
            "--port",
            "0",
        ]
        # The server reads ORCH8_* settings: the test's own environment must not change it.
        env = {k: v for k, v in os.environ.items() if not k.startswith("ORCH8_")}
        env["PYTHONUNBUFFERED"] = "1"
        try:
            with self.log_path.open("wb") as log:
                self._process = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=env
                )
        except OSError as err:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            raise ServerNotFoundError(
                f"cannot start the reference server `{shlex.join(command)}`: {err}. Install it "
                "with `pip install orch8-server` or set ORCH8_SERVER to its command."
            ) from err
        # Also run at interpreter exit: a test that never closes its server leaves no orphan.
        self._stop = weakref.finalize(self, _stop_server, self._process, self._tmpdir)
        try:
            self.url = self._read_url(command, timeout_ms / 1000)
        except BaseException:
            self.close()
            raise
        self.client = Orch8Client(self.url)

    def _read_url(self, command: list[str], timeout_s: float) -> str:
        found: list[str] = []
        seen = threading.Event()

        def read() -> None:
            assert self._process.stdout is not None
            with self._process.stdout:
                for raw in self._process.stdout:  # drained to the end so the pipe never fills
                    match = LISTENING_LINE.match(raw.decode(errors="replace").strip())
                    if match and not found:
                        found.append(match[1])
                        seen.set()
            seen.set()

        threading.Thread(target=read, name="orch8-test-server", daemon=True).start()
        seen.wait(timeout_s)
        if not found:
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(
                f"`{shlex.join(command)}` printed no listening line within {timeout_s:.0f} s "
                f"(exit code {self._process.poll()}); its stderr ends with:\n{tail}"
            )
        return found[0]

    # --- the clock (P-CLOCK-1..3) ------------------------------------------------------------

    def clock(self) -> Clock:
        """The server's clock: `now`, `next_timer_at` (None when no timer is set)."""
        return self.client.get_clock()

    def advance(self, ms: int, *, timeout_ms: int = 30_000) -> Clock:
        """Once the running workers are idle, move the clock by `ms`; due timers have fired."""
        self.wait_idle(timeout_ms=timeout_ms)
        return self.client.advance_clock(by_ms=ms)

    def skip_to_next_timer(self, *, timeout_ms: int = 30_000) -> Clock:
        """Once the running workers are idle, move the clock to the next timer (if any)."""
        self.wait_idle(timeout_ms=timeout_ms)
        return self.client.advance_clock(to_next_timer=True)

    def wait_idle(self, *, timeout_ms: int = 30_000) -> None:
        """Wait until no task runs and none waits for a running worker (P-CLOCK-3)."""
        deadline = time.monotonic() + timeout_ms / 1000
        while (busy := self._busy()) is not None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"not idle after {timeout_ms} ms: {busy}")
            time.sleep(POLL_S)

    def _busy(self) -> str | None:
        """What keeps the workers busy, or None when skipping time would lose no work."""
        for running in self._workers:
            running.raise_if_failed()
            if running.worker.stats().in_flight:
                return f"worker {running.worker.worker_id} holds a task"
        open_tasks = self.client.list_tasks(status=["running", "pending"], limit=100).tasks
        for task in open_tasks:
            if task.status == "running":
                return f"task {task.id} ({task.handler_name}) is running"
            if any(r.claims(task.handler_name, task.queue_name) for r in self._workers):
                return f"task {task.id} ({task.handler_name}) is pending"
        return None

    # --- workers in-process ------------------------------------------------------------------

    def worker(self, **options: Any) -> Worker:
        """A `Worker` on this server, without signal handlers (it runs in a thread)."""
        options.setdefault("worker_id", "test-worker")
        return Worker(base_url=self.url, handle_signals=False, **options)

    @contextlib.contextmanager
    def running(self, worker: Worker) -> Iterator[Worker]:
        """Run `worker` in a thread of this process for the block; stopped when it ends."""
        running = _Running(worker)
        self._workers.append(running)
        try:
            yield worker
        finally:
            self._workers.remove(running)
            running.stop()
        running.raise_if_failed()

    @overload
    def run_until_final(
        self, worker: Worker, *, instance_id: str, timeout_ms: int = ...
    ) -> Instance: ...

    @overload
    def run_until_final(self, worker: Worker, *, task_id: str, timeout_ms: int = ...) -> Task: ...

    def run_until_final(
        self,
        worker: Worker,
        *,
        instance_id: str | None = None,
        task_id: str | None = None,
        timeout_ms: int = 30_000,
    ) -> Instance | Task:
        """Run `worker` until the instance (or task) is final, skipping to the next timer
        whenever the worker is idle; returns the final `Instance` or `Task`."""
        if (instance_id is None) == (task_id is None):
            raise ValueError("give instance_id or task_id")
        name = f"instance {instance_id}" if instance_id is not None else f"task {task_id}"
        deadline = time.monotonic() + timeout_ms / 1000
        with self.running(worker):
            while (target := self._final(instance_id, task_id)) is None:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{name} not final after {timeout_ms} ms")
                if self._busy() is not None:
                    time.sleep(POLL_S)
                elif self.client.advance_clock(to_next_timer=True).advanced_ms == 0:
                    # Idle and no timer ahead; what was due has fired. Unless that ended the
                    # target or gave the worker work, nothing will ever move it.
                    if (target := self._final(instance_id, task_id)) is not None:
                        return target
                    if self._busy() is None:
                        raise AssertionError(
                            f"{name} is not final, no task is left to run and no timer is set"
                        )
            return target

    def _final(self, instance_id: str | None, task_id: str | None) -> Instance | Task | None:
        if instance_id is not None:
            instance = self.client.get_instance(instance_id)
            return instance if instance.status in INSTANCE_FINAL else None
        assert task_id is not None
        task = self.client.get_task(task_id)
        return task if task.status in TASK_FINAL else None

    # --- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the workers and the server; remove the temp directory."""
        for running in list(self._workers):
            running.stop()
        self._workers.clear()
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        self._stop()

    def __enter__(self) -> TestServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<TestServer {self.url}>"


def _stop_server(process: subprocess.Popen[bytes], tmpdir: str) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    shutil.rmtree(tmpdir, ignore_errors=True)


class _Running:
    """One worker running in a thread; remembers why it ended early."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.queues = set(
            select_queues(worker.queue_name, worker.queue_names, worker.queue_weights).registered
        )
        self.handlers = set(worker.handler_names)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="orch8-test-worker", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.worker.run()
        except BaseException as err:  # re-raised in the test's thread
            self.error = err

    def claims(self, handler_name: str, queue_name: str) -> bool:
        return handler_name in self.handlers and queue_name in self.queues

    def raise_if_failed(self) -> None:
        if self.error is not None:
            raise RuntimeError(f"worker {self.worker.worker_id} stopped: {self.error}") from (
                self.error
            )

    def stop(self) -> None:
        self.worker.stop()
        self.thread.join(self.worker.grace_period_ms / 1000 + 10)
