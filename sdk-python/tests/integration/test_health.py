"""The worker health endpoint (P-TEL-5) of a worker running against the real server."""

from __future__ import annotations

import threading
from typing import Any

import httpx

from orch8 import Orch8Client, TaskContext

from .conftest import Server, make_worker, wait_until

FIELDS = {"status", "worker_id", "in_flight", "free_slots", "last_poll_at", "last_heartbeat_at"}


def get_health(address: tuple[str, int]) -> httpx.Response:
    host, port = address
    return httpx.get(f"http://{host}:{port}/health", timeout=5)


def test_health_is_off_by_default(server: Server, run_worker: Any) -> None:
    """P-TEL-5: no health_port, no endpoint."""
    worker, _ = make_worker(server)
    worker.register("h", lambda ctx: None)
    run_worker(worker)
    wait_until(lambda: worker.stats().polls >= 1)
    assert worker.health_address is None


def test_health_200_while_running_then_503_stopping_p_tel_5(
    server: Server, client: Orch8Client, run_worker: Any
) -> None:
    """P-TEL-5: 200 with the fields while running; 503 `stopping` once shutdown begins."""
    worker, _ = make_worker(server, worker_id="w-health", concurrency=3, health_port=0)
    release = threading.Event()

    @worker.handler("slow")
    def slow(ctx: TaskContext) -> None:
        release.wait(10)

    rw = run_worker(worker)
    address = wait_until(lambda: worker.health_address, what="the health endpoint to listen")
    assert address[0] == "127.0.0.1"
    client.enqueue("slow")
    wait_until(lambda: worker.stats().in_flight == 1)
    # The first heartbeat (interval 300 ms) sets last_heartbeat_at.
    wait_until(lambda: get_health(address).json()["last_heartbeat_at"])
    answer = get_health(address)
    assert answer.status_code == 200
    body = answer.json()
    assert set(body) == FIELDS
    assert body["status"] == "ok" and body["worker_id"] == "w-health"
    assert (body["in_flight"], body["free_slots"]) == (1, 2)
    assert body["last_poll_at"].endswith("Z") and body["last_heartbeat_at"].endswith("Z")
    assert get_health(address).headers["content-type"] == "application/json"

    worker.stop()  # the grace period waits for the held task
    stopping = wait_until(lambda: (r := get_health(address)).status_code == 503 and r)
    assert stopping.json()["status"] == "stopping"
    assert stopping.json()["in_flight"] == 1
    release.set()
    rw.join()
    assert worker.health_address is None  # closed with the worker
