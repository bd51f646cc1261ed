"""A scripted in-memory server for worker unit tests (httpx.MockTransport, no network).

It answers the worker's calls with the contract's shapes, records every request and lets a
test override any route. Integration tests use the real server instead.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from orch8 import AsyncOrch8Client, RetryPolicy, Worker

from .conftest import BASE, claimed_task

Route = Callable[[httpx.Request, Any], httpx.Response]


def worker_record(worker_id: str = "w") -> dict[str, Any]:
    return {
        "worker_id": worker_id,
        "state": "running",
        "directive": "running",
        "hostname": "h",
        "pid": 1,
        "handlers": ["process_image"],
        "queues": ["default"],
        "concurrency": 2,
        "labels": {},
        "sdk": "orch8-python/0.1.0",
        "active_tasks": 0,
        "registered_at": "2026-11-21T10:29:00.000Z",
        "last_heartbeat_at": "2026-11-21T10:29:00.000Z",
        "heartbeat_interval_ms": 50,
        "dead_after_ms": 30000,
    }


def outcome_item(task_id: str, status: str = "completed", problem: Any = None) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "status": status,
        "attempt": 1 if problem is None else None,
        "attempts_left": 2 if problem is None else None,
        "next_attempt_at": None,
        "problem": problem,
    }


def task_outcome(task_id: str, status: str) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "status": status,
        "attempt": 1,
        "attempts_left": 0,
        "next_attempt_at": None,
        "error_code": None,
    }


class FakeServer:
    """Claimable tasks in a list; every request recorded as (method, path, body)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: list[dict[str, Any]] = []
        self.requests: list[tuple[str, str, Any]] = []
        self.routes: dict[tuple[str, str], Route] = {}
        self.completed: list[str] = []
        self.failed: list[dict[str, Any]] = []

    def add(self, task_id: str, handler_name: str = "process_image", **over: Any) -> None:
        body = claimed_task(task_id, handler_name=handler_name, **over)
        body["lease"]["expires_at"] = "2999-01-01T00:00:00.000Z"
        with self.lock:
            self.pending.append(body)

    def route(self, method: str, path: str) -> Callable[[Route], Route]:
        def set_route(fn: Route) -> Route:
            self.routes[(method, path)] = fn
            return fn

        return set_route

    def sent(self, method: str, path: str) -> list[Any]:
        with self.lock:
            return [b for m, p, b in self.requests if (m, p) == (method, path)]

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        key = (request.method, request.url.path)
        with self.lock:
            self.requests.append((*key, body))
        if key in self.routes:
            return self.routes[key](request, body)
        return self.default(request.method, request.url.path, body)

    def default(self, method: str, path: str, body: Any) -> httpx.Response:
        if (method, path) == ("POST", "/workers"):
            return httpx.Response(200, json=worker_record(body["worker_id"]))
        if method == "POST" and path.endswith("/heartbeat") and path.startswith("/workers/"):
            if "/tasks/" in path:
                return httpx.Response(
                    200,
                    json={
                        "task_id": path.split("/")[3],
                        "lease_id": "lease_1",
                        "lease_expires_at": "2999-01-01T00:00:00.000Z",
                        "cancel_requested": False,
                    },
                )
            tasks = [
                {
                    "task_id": t,
                    "lease_lost": False,
                    "cancel_requested": False,
                    "lease_expires_at": "2999-01-01T00:00:00.000Z",
                }
                for t in body.get("active_task_ids", [])
            ]
            return httpx.Response(
                200, json={"directive": "running", "heartbeat_interval_ms": 50, "tasks": tasks}
            )
        if method == "DELETE" and path.startswith("/workers/"):
            return httpx.Response(200, json=worker_record(path.split("/")[2]))
        if (method, path) == ("POST", "/workers/tasks/poll/batch"):
            with self.lock:
                names = body.get("handler_names")
                take = [t for t in self.pending if names is None or t["handler_name"] in names]
                take = take[: body.get("batch_size", 10)]
                for t in take:
                    self.pending.remove(t)
            if not take:
                time.sleep(0.01)  # a short "long-poll"
            return httpx.Response(200, json={"tasks": take, "next_poll_after_ms": 0})
        if (method, path) == ("POST", "/workers/tasks/complete/batch"):
            with self.lock:
                self.completed += [i["task_id"] for i in body["items"]]
            return httpx.Response(
                200, json={"items": [outcome_item(i["task_id"]) for i in body["items"]]}
            )
        if method == "POST" and path.endswith("/release"):  # P-SDK-32, P-SDK-33
            return httpx.Response(200, json=task_outcome(path.split("/")[3], "pending"))
        if method == "POST" and path.endswith("/fail"):
            task_id = path.split("/")[3]
            with self.lock:
                self.failed.append({"task_id": task_id, **body})
            return httpx.Response(200, json=task_outcome(task_id, "failed"))
        return httpx.Response(404, json={"code": "not_found", "status": 404, "detail": path})

    def client(self) -> AsyncOrch8Client:
        return AsyncOrch8Client(
            BASE,
            transport=httpx.MockTransport(self.handle),
            retry=RetryPolicy(max_retries=1, base_delay_ms=1, max_delay_ms=2),
        )

    def worker(self, **kw: Any) -> Worker:
        kw.setdefault("worker_id", "w")
        kw.setdefault("handle_signals", False)
        kw.setdefault("outage_backoff_ms", (5, 20))
        kw.setdefault("wait_ms", 100)
        return Worker(self.client(), **kw)


class Running:
    """A worker's run() on a thread; `stop()` joins it and re-raises its error."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.thread.start()

    def _main(self) -> None:
        try:
            self.worker.run()
        except BaseException as exc:
            self.error = exc

    def stop(self, timeout: float = 10) -> None:
        self.worker.stop()
        self.join(timeout)

    def join(self, timeout: float = 10) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "worker did not stop in time"
        if self.error is not None:
            raise self.error


def wait_until(predicate: Callable[[], object], timeout: float = 10.0) -> object:
    """Poll until truthy (deadline-bounded, no bare sleeps in the tests)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s")
        time.sleep(0.005)
