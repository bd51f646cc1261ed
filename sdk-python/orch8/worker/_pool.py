"""A thread pool of daemon threads for synchronous handlers (P-SDK-17).

concurrent.futures.ThreadPoolExecutor joins its threads at interpreter exit, so one busy
handler that ignores its cancellation signal kept a stopped worker's process alive until
the handler returned (measured: 58 s after Ctrl-C). Daemon threads do not hold the process:
the task was already failed with `shutdown` and its late result is discarded.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonPool(Executor):
    """At most `max_workers` daemon threads, started on demand."""

    def __init__(self, max_workers: int, thread_name_prefix: str = "orch8") -> None:
        self._max = max_workers
        self._prefix = thread_name_prefix
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._shutdown = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit after shutdown")
            self._jobs.put((future, fn, args, kwargs))
            if self._idle == 0 and len(self._threads) < self._max:
                thread = threading.Thread(
                    target=self._work, name=f"{self._prefix}-{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
            else:
                self._idle -= 1 if self._idle else 0
        return future

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            future, fn, args, kwargs = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:
                    future.set_exception(exc)
            with self._lock:
                self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            threads = list(self._threads)
        if cancel_futures:
            while True:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    job[0].cancel()
        for _ in threads:
            self._jobs.put(None)
        if wait:
            for thread in threads:
                thread.join()
