"""Workflows row (issue 16): 3-step instances completed per second, on one backend.

Defines a 3-step sequence (a -> b -> c, each step's params taken from the previous
step's output), starts N instances (a few starter threads, one keep-alive connection
each, 100 instances per `POST /instances/batch` as tasks are enqueued 100 per request;
`start_batch=1` starts them one `POST /instances` each, as the rows before 2026-11-28 did), and drains them with a few raw workers (poll/batch + complete/batch over HTTP,
stdlib only). The clock runs from the first start to the last step-c completion, so
the figure includes the starts, the engine's advancing (P-WF-5) and 3 task round trips
per instance; checked at the end: every instance `completed`.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

STEPS = ("a", "b", "c")
WORKERS = 4
STARTERS = 4
BATCH = 50
START_BATCH = 100  # instances per POST /instances/batch (P-WF-14); 1: POST /instances each


class Client:
    """One keep-alive connection; JSON in and out."""

    def __init__(self, url: str) -> None:
        u = urlsplit(url)
        self.conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=30)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"content-type": "application/json"} if data is not None else {}
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)

    def close(self) -> None:
        self.conn.close()


def define(url: str, name: str) -> list[str]:
    handlers = [f"{name}_{s}" for s in STEPS]
    steps: list[dict[str, Any]] = [{"id": STEPS[0], "handler": handlers[0]}]
    for i in range(1, len(STEPS)):
        steps.append({"id": STEPS[i], "handler": handlers[i],
                      "params": {"x": {"$from": f"steps.{STEPS[i - 1]}.output"}}})  # fmt: skip
    c = Client(url)
    try:
        status, body = c.call("POST", "/sequences", {"name": name, "steps": steps})
        assert status in (200, 201), (status, body)
    finally:
        c.close()
    return handlers


def run_once(
    url: str, n: int, workers: int = WORKERS, start_batch: int = START_BATCH
) -> dict[str, Any]:
    """Start n instances of a fresh 3-step sequence (`start_batch` per request) and drain
    them; instances/s."""
    name = "wfbench_" + uuid.uuid4().hex[:8]
    handlers = define(url, name)
    done = threading.Event()
    finished = [0]  # step-c completions
    lock = threading.Lock()
    ids: list[str] = []

    def worker() -> None:
        c = Client(url)
        try:
            while not done.is_set():
                status, body = c.call("POST", "/workers/tasks/poll/batch",
                                      {"handler_names": handlers, "batch_size": BATCH,
                                       "wait_ms": 200})  # fmt: skip
                assert status == 200, (status, body)
                tasks = body["tasks"]
                if not tasks:
                    continue
                items = [{"task_id": t["id"], "lease_id": t["lease"]["id"],
                          "output": {"v": 1}} for t in tasks]  # fmt: skip
                status, body = c.call("POST", "/workers/tasks/complete/batch", {"items": items})
                assert status == 200, (status, body)
                last = sum(1 for t in tasks if t["handler_name"] == handlers[-1])
                with lock:
                    finished[0] += last
                    if finished[0] >= n:
                        done.set()
        finally:
            c.close()

    def starter(count: int) -> list[str]:
        c = Client(url)
        out = []
        try:
            while len(out) < count:
                k = min(start_batch, count - len(out))
                if start_batch == 1:
                    status, body = c.call("POST", "/instances", {"sequence": name})
                    assert status == 201, (status, body)
                    out.append(body["id"])
                    continue
                batch = {"instances": [{"sequence": name}] * k}
                status, body = c.call("POST", "/instances/batch", batch)
                assert status == 201, (status, body)
                out += [inst["id"] for inst in body["instances"]]
        finally:
            c.close()
        return out

    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers + STARTERS) as pool:
        running = [pool.submit(worker) for _ in range(workers)]
        shares = [n // STARTERS + (1 if i < n % STARTERS else 0) for i in range(STARTERS)]
        for part in pool.map(starter, shares):
            ids += part
        finished_in_time = done.wait(timeout=max(60.0, n / 10))
        seconds = time.perf_counter() - t0
        done.set()
        for f in running:
            f.result()
    assert finished_in_time, f"only {finished[0]} of {n} instances drained"
    c = Client(url)
    try:
        for inst in (ids[0], ids[-1]):
            status, body = c.call("GET", f"/instances/{inst}?wait_ms=5000")
            assert status == 200 and body["status"] == "completed", body
    finally:
        c.close()
    return {"instances_per_s": n / seconds, "seconds": seconds, "tasks": 3 * n,
            "instances": n, "start_batch": start_batch}  # fmt: skip
