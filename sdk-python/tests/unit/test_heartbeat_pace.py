"""P-SDK-30 Heartbeats fit the lease: a lease shorter than three heartbeat intervals is kept.

The worker heartbeats every min(heartbeat_interval_ms, L / 3), L the shortest lease held
(expires_at minus the arrival of its poll answer), never more often than every 100 ms.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
from typing import Any

import httpx
import respx

from orch8 import AsyncOrch8Client, RetryPolicy, TaskContext, Worker
from orch8.worker._loops import heartbeat_period_ms, next_heartbeat_at
from orch8.worker._runtime import lease_heartbeat_ms

from .conftest import BASE, claimed_task
from .fake_server import Running, outcome_item, wait_until, worker_record

SERVER_INTERVAL_MS = 5000
LEASE_MS = 1500


def _rfc3339(at: float) -> str:
    when = datetime.datetime.fromtimestamp(at, datetime.timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_p_sdk_30_a_third_of_the_lease_floored_at_100_ms_capped_by_the_interval() -> None:
    assert lease_heartbeat_ms(5000, 1500) == 500
    assert lease_heartbeat_ms(5000, 60000) == 5000  # a long lease: the server's interval
    assert lease_heartbeat_ms(5000, 150) == 100  # the floor
    assert lease_heartbeat_ms(5000, 0) == 100  # an expired lease on arrival: the floor too
    assert lease_heartbeat_ms(50, 0) == 50  # the floor never slows a shorter interval down


class _Held:
    def __init__(self, lease_ms: float | None, claimed_at: float) -> None:
        self.lease_ms = lease_ms
        self.claimed_at = claimed_at


def test_p_sdk_30_the_next_heartbeat_follows_the_tasks_held_now() -> None:
    held: list[Any] = []
    assert next_heartbeat_at(10.0, 5000, held) == 15.0  # idle: the server's interval
    held.append(_Held(60000, 9.0))
    assert next_heartbeat_at(10.0, 5000, held) == 15.0
    # Claimed at 12 while the loop sleeps until 15: its first heartbeat is due by 12.5.
    held.append(_Held(1500, 12.0))
    assert next_heartbeat_at(10.0, 5000, held) == 12.5
    assert next_heartbeat_at(12.5, 5000, held) == 13.0  # then every 500 ms
    assert heartbeat_period_ms(5000, held) == 500
    held.pop()  # done: back to the server's interval
    assert next_heartbeat_at(13.0, 5000, held) == 18.0
    assert heartbeat_period_ms(5000, held) == 5000


@respx.mock
def test_p_sdk_30_a_lease_of_1500_ms_gets_a_heartbeat_every_500_ms_then_the_interval() -> None:
    """Server interval 5000 ms, a lease expiring 1500 ms after the poll answer: heartbeats
    listing the task about every 500 ms while it runs, none for a second once it is done.
    """
    claimed: list[float] = []  # monotonic time of the poll answer that carried the task
    beats: list[tuple[float, list[str]]] = []  # (monotonic time, active_task_ids)

    def poll(request: httpx.Request) -> httpx.Response:
        tasks = []
        if not claimed:
            task = claimed_task("t1")
            task["lease"]["expires_at"] = _rfc3339(time.time() + LEASE_MS / 1000)
            tasks = [task]
            claimed.append(time.monotonic())
        return httpx.Response(200, json={"tasks": tasks, "next_poll_after_ms": 50})

    def heartbeat(request: httpx.Request) -> httpx.Response:
        ids = json.loads(request.content)["active_task_ids"]
        beats.append((time.monotonic(), ids))
        expires = _rfc3339(time.time() + LEASE_MS / 1000)
        tasks = [
            {
                "task_id": t,
                "lease_lost": False,
                "cancel_requested": False,
                "lease_expires_at": expires,
            }
            for t in ids
        ]
        return httpx.Response(
            200,
            json={
                "directive": "running",
                "heartbeat_interval_ms": SERVER_INTERVAL_MS,
                "tasks": tasks,
            },
        )

    record = {**worker_record("w"), "heartbeat_interval_ms": SERVER_INTERVAL_MS}
    respx.post(f"{BASE}/workers").respond(200, json=record)
    respx.post(f"{BASE}/workers/w/heartbeat").mock(side_effect=heartbeat)
    respx.delete(f"{BASE}/workers/w").respond(200, json=record)
    respx.post(f"{BASE}/workers/tasks/poll/batch").mock(side_effect=poll)
    respx.post(f"{BASE}/workers/tasks/complete/batch").respond(
        200, json={"items": [outcome_item("t1")]}
    )
    release = threading.Event()

    def handler(ctx: TaskContext) -> str:
        release.wait(10)  # runs until the test lets it finish; never heartbeats itself
        return "done"

    client = AsyncOrch8Client(BASE, retry=RetryPolicy(base_delay_ms=1, max_delay_ms=2))
    worker = Worker(client, worker_id="w", handle_signals=False, wait_ms=100)
    worker.register("process_image", handler)
    run = Running(worker)
    try:
        wait_until(lambda: claimed, timeout=5)

        def naming_t1() -> list[float]:
            return [at for at, ids in list(beats) if "t1" in ids]

        # Three heartbeats naming the task within 2 s of its claim (due at 0.5, 1.0, 1.5 s).
        wait_until(
            lambda: len(naming_t1()) >= 3, timeout=max(0.0, claimed[0] + 2.0 - time.monotonic())
        )
        times = naming_t1()
        assert times[2] - claimed[0] <= 2.0
        assert times[0] - claimed[0] <= 0.9  # the first within about L / 3 of the claim
        gaps = [times[1] - times[0], times[2] - times[1]]
        assert all(0.3 <= gap <= 0.9 for gap in gaps), gaps  # about every 500 ms, not 100

        release.set()
        wait_until(lambda: worker.stats().tasks_completed == 1, timeout=5)
        wait_until(lambda: worker.stats().in_flight == 0, timeout=5)
        done_at = time.monotonic()
        # Back to the server's 5000 ms: no heartbeat in the next second (this wait is the
        # behaviour under test).
        threading.Event().wait(1.0)
        later = [at for at, _ in list(beats) if at > done_at + 0.05]
        assert later == [], f"{len(later)} heartbeats within 1 s after the task ended"
    finally:
        release.set()
        run.stop()
    stats = worker.stats()
    assert (stats.tasks_claimed, stats.tasks_completed, stats.tasks_lease_lost) == (1, 1, 0)
