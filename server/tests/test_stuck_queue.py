"""The stuck-queue badge follows the workers within seconds (P-OBS-1, seed 001).

A real worker process long-polls; while its poll waits it counts however long the wait,
and once it is killed (SIGKILL: its connection drops, its poll ends) `active_pollers`
reaches 0 within one heartbeat interval (plus the sharing lag between replicas on
PostgreSQL), not after max_wait_ms + 5 s as it used to.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable

import httpx
from conftest import eventually

from orch8_server.lifecycle.pollers import SHARED_LAG_MS
from orch8_server.testing import RunningServer

HEARTBEAT_MS = 1000
WORKER = """
import sys, httpx
url, handler = sys.argv[1:3]
body = {"handler_names": [handler], "worker_id": "w-" + handler, "wait_ms": 10000}
with httpx.Client(base_url=url, timeout=30) as c:
    while True:
        c.post("/workers/tasks/poll", json=body)
"""


def test_active_pollers_drop_to_zero_soon_after_the_last_worker_is_killed(
    start_server: Callable[..., RunningServer], backend: str, name: str
) -> None:
    server = start_server(**{"heartbeat-interval-ms": HEARTBEAT_MS, "max-wait-ms": 60000})
    worker = subprocess.Popen([sys.executable, "-c", WORKER, server.url, name])
    try:
        with httpx.Client(base_url=server.url, timeout=10) as api:

            def pollers() -> int:
                rows = api.get("/queues").json()["queues"]
                return sum(r["active_pollers"] for r in rows if r["handler_name"] == name)

            assert eventually(pollers, timeout=10) == 1
            # A poll that waits longer than the heartbeat interval still counts.
            parked_until = time.monotonic() + 2.5 * HEARTBEAT_MS / 1000
            while time.monotonic() < parked_until:
                assert pollers() == 1
                time.sleep(0.05)  # a sampler's pace, not a wait for an event

            worker.kill()  # like kill -9: no goodbye, the connection just drops
            killed = time.monotonic()
            worker.wait(10)
            api.post("/tasks", json={"handler_name": name})
            bound = (HEARTBEAT_MS + (SHARED_LAG_MS if backend == "postgresql" else 0)) / 1000

            def stuck() -> bool:
                rows = api.get("/queues").json()["queues"]
                row = next(r for r in rows if r["handler_name"] == name)
                return row["pending"] == 1 and row["active_pollers"] == 0

            eventually(stuck, timeout=bound + 2)
            lag = time.monotonic() - killed
            print(f"{backend}: active_pollers 0 {lag:.2f} s after SIGKILL (bound {bound} s)")
            assert lag < bound + 2
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
