"""Integration fixtures: the REAL reference server on loopback, one per test (clean slate)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from orch8_server.testing import RunningServer, start_server

from orch8 import AsyncOrch8Client, Orch8Client, RetryPolicy, Worker

# Short timings so lease expiry and dead-worker detection happen within a test.
FAST = {
    "lease-ms": 2000,
    "reaper-interval-ms": 100,
    "heartbeat-interval-ms": 300,
    "dead-after-ms": 3000,
}


def wait_until(predicate: Callable[[], object], timeout: float = 10.0, what: str = "") -> object:
    """Poll `predicate` until truthy or fail after `timeout` seconds (no bare sleeps)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or predicate}")
        time.sleep(0.02)


# The shared launcher (orch8_server.testing, issue 19): `--port 0` and the listening line.
Server = RunningServer


@pytest.fixture
def server_factory() -> Iterator[Callable[..., RunningServer]]:
    started: list[RunningServer] = []

    def make(**overrides: int) -> RunningServer:
        flags = {**FAST, **{k.replace("_", "-"): v for k, v in overrides.items()}}
        args = [part for name, value in flags.items() for part in (f"--{name}", str(value))]
        srv = start_server(*args)
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.close()


@pytest.fixture
def server(server_factory: Callable[..., RunningServer]) -> RunningServer:
    return server_factory()


@pytest.fixture
def client(server: Server) -> Iterator[Orch8Client]:
    with Orch8Client(server.url, retry=RetryPolicy(base_delay_ms=50, max_delay_ms=200)) as c:
        yield c


class RunningWorker:
    """A Worker running `run()` on a background thread, joined at the end of the test."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True)

    def _main(self) -> None:
        try:
            self.worker.run()
        except BaseException as exc:
            self.error = exc

    def start(self) -> RunningWorker:
        self.thread.start()
        return self

    def join(self, timeout: float = 30) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "worker did not stop in time"
        if self.error is not None:
            raise self.error

    def stop_and_join(self, timeout: float = 30) -> None:
        self.worker.stop()
        self.join(timeout)


@pytest.fixture
def run_worker() -> Iterator[Callable[[Worker], RunningWorker]]:
    running: list[RunningWorker] = []

    def start(worker: Worker) -> RunningWorker:
        rw = RunningWorker(worker).start()
        running.append(rw)
        return rw

    yield start
    for rw in running:
        if rw.thread.is_alive():
            rw.worker.stop()
            rw.thread.join(30)


def env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


class RecordingTransport(httpx.AsyncHTTPTransport):
    """Records every request the worker sends: (method, path, JSON body)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str, object]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.sent.append((request.method, request.url.path, body))
        return await super().handle_async_request(request)

    def results_for(self, task_id: str) -> list[tuple[str, object]]:
        """complete/fail requests sent for one task: (kind, body); batch items count too."""
        out = []
        for method, path, body in self.sent:
            if method != "POST":
                continue
            for kind in ("complete", "fail"):
                if path == f"/workers/tasks/{task_id}/{kind}":
                    out.append((kind, body))
                elif path == f"/workers/tasks/{kind}/batch" and isinstance(body, dict):
                    out += [(kind, i) for i in body["items"] if i.get("task_id") == task_id]
        return out

    def result_index(self, task_id: str) -> int:
        """Position in `sent` of the first complete/fail request carrying this task."""
        for n, (method, path, body) in enumerate(self.sent):
            single = path in (
                f"/workers/tasks/{task_id}/complete",
                f"/workers/tasks/{task_id}/fail",
            )
            batch = (
                path.endswith("/batch")
                and path.startswith("/workers/tasks/")
                and (
                    isinstance(body, dict)
                    and any(i.get("task_id") == task_id for i in body.get("items", []))
                )
            )
            if method == "POST" and (single or batch) and not path.endswith("/poll/batch"):
                return n
        raise ValueError(f"no result sent for {task_id}")


def make_worker(server: Server, **kw: object) -> tuple[Worker, RecordingTransport]:
    """A worker with short waits, no signal handlers and a recording transport."""
    transport = RecordingTransport()
    client = AsyncOrch8Client(
        server.url, transport=transport, retry=RetryPolicy(base_delay_ms=50, max_delay_ms=200)
    )
    kw.setdefault("wait_ms", 1000)
    kw.setdefault("grace_period_ms", 5000)
    kw.setdefault("handle_signals", False)
    kw.setdefault("outage_backoff_ms", (50, 500))
    return Worker(client, **kw), transport  # type: ignore[arg-type]
