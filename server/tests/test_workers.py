"""Workers, batched heartbeats, directives, dead workers and the reaper."""

from __future__ import annotations

import time

import httpx
from conftest import assert_problem, claim, enqueue, eventually


def register(api: httpx.Client, worker_id: str, **fields) -> dict:
    r = api.post(
        "/workers", json={"worker_id": worker_id, "handlers": ["x"], "concurrency": 4, **fields}
    )
    assert r.status_code == 200, r.text
    return r.json()


def test_register_is_idempotent_and_advertises_cadence(api: httpx.Client, name: str) -> None:
    """P-WORKER-1."""
    w = register(api, name, hostname="h1", pid=42, labels={"region": "eu"}, sdk="test/1")
    assert (
        w["state"] == "running"
        and w["directive"] == "running"
        and w["heartbeat_interval_ms"] == 200
    )
    again = register(api, name, hostname="h2")
    assert again["hostname"] == "h2"
    assert api.get(f"/workers/{name}").json()["hostname"] == "h2"
    assert name in [
        x["worker_id"] for x in api.get("/workers", params={"state": "running"}).json()["workers"]
    ]


def test_worker_heartbeat_extends_leases_and_reports_each_task(
    api: httpx.Client, name: str
) -> None:
    """P-WORKER-2."""
    register(api, name)
    mine = enqueue(api, name)
    # Leases of 1 s, beats every 0.25 s: margin for a loaded machine (2 cores, shared).
    claim(api, name, worker_id=name, lease_ms=1000)
    cancelled = enqueue(api, name)
    claim(api, name, worker_id=name, lease_ms=1000)
    api.post(f"/tasks/{cancelled['id']}/cancel")
    deadline = time.monotonic() + 3.0  # three lease lengths, kept alive only by worker heartbeats
    while time.monotonic() < deadline:
        r = api.post(
            f"/workers/{name}/heartbeat",
            json={"active_task_ids": [mine["id"], cancelled["id"], "task_unknown"]},
        )
        assert r.status_code == 200
        answers = {t["task_id"]: t for t in r.json()["tasks"]}
        time.sleep(0.25)  # the heartbeat cadence, not a wait for an event
    assert answers[mine["id"]]["lease_lost"] is False and answers[mine["id"]]["lease_expires_at"]
    assert answers[cancelled["id"]]["cancel_requested"] is True
    assert answers["task_unknown"]["lease_lost"] is True
    assert api.get(f"/tasks/{mine['id']}").json()["status"] == "running"
    assert api.get(f"/workers/{name}").json()["active_tasks"] == 1


def test_directives_reach_the_worker(api: httpx.Client, name: str) -> None:
    """P-WORKER-3/4."""
    register(api, name)
    for op, directive in [("quiet", "quiet"), ("resume", "running"), ("terminate", "terminate")]:
        assert api.post(f"/workers/{name}/{op}").json()["directive"] == directive
        assert api.post(f"/workers/{name}/heartbeat", json={}).json()["directive"] == directive
    assert_problem(api.post("/workers/nobody-here/quiet"), 404, "not_found")


def test_dead_worker_tasks_are_reclaimed(api: httpx.Client, name: str) -> None:
    """P-WORKER-5: silent past dead_after_ms (1.5 s here) -> dead, tasks back at once."""
    register(api, name)
    task = enqueue(api, name)
    claim(api, name, worker_id=name, lease_ms=600000)
    eventually(lambda: api.get(f"/workers/{name}").json()["state"] == "dead", timeout=5)
    reclaimed = api.get(f"/tasks/{task['id']}").json()
    assert reclaimed["status"] == "pending" and reclaimed["error"]["code"] == "worker_lost"
    history = api.get(f"/tasks/{task['id']}/attempts").json()["attempts"]
    assert history[-1]["outcome"] == "worker_lost"


def test_deregister_reclaims_held_tasks(api: httpx.Client, name: str) -> None:
    register(api, name)
    task = enqueue(api, name)
    claim(api, name, worker_id=name, lease_ms=600000)
    r = api.delete(f"/workers/{name}")
    assert r.status_code == 200 and r.json()["state"] == "deregistered"
    assert_problem(api.get(f"/workers/{name}"), 404, "not_found")
    assert api.get(f"/tasks/{task['id']}").json()["status"] == "pending"


def test_expired_lease_is_reaped_and_counts_as_attempt(api: httpx.Client, name: str) -> None:
    """P-LEASE-6: reclaimed within about one reaper tick; exhausted tasks end failed."""
    task = enqueue(api, name, retry={"max_attempts": 2})
    claim(api, name, lease_ms=100)
    eventually(lambda: api.get(f"/tasks/{task['id']}").json()["status"] == "pending", timeout=2)
    claim(api, name, lease_ms=100)
    final = eventually(
        lambda: (t := api.get(f"/tasks/{task['id']}").json())["status"] == "failed" and t, timeout=2
    )
    assert final["error"]["code"] == "lease_expired" and final["attempt"] == 2
