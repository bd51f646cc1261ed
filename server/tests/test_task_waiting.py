"""Why a task is not running (P-OBS-7): GET /tasks/{id} says what holds it, in order."""

from __future__ import annotations

import httpx
from conftest import claim, enqueue


def waiting(api: httpx.Client, task: dict) -> dict:
    r = api.get(f"/tasks/{task['id']}")
    assert r.status_code == 200, r.text
    return r.json()["waiting"]


def test_each_hold_is_named_in_the_rules_order_P_OBS_7(api: httpx.Client, name: str) -> None:
    queue = name + "_q"
    later = enqueue(api, name, queue_name=queue, delay_ms=60_000)
    held = waiting(api, later)
    assert held["reason"] == "scheduled" and held["until"] == later["run_at"], held
    task = enqueue(api, name, queue_name=queue)
    assert waiting(api, task)["reason"] == "no_poller"
    labelled = enqueue(api, name, queue_name=queue, required_labels={"gpu": "a100"})
    held = waiting(api, labelled)
    assert held["reason"] == "unroutable" and "gpu=a100" in held["detail"], held
    api.put(f"/handlers/{name}/limit", json={"max_running": 1}).raise_for_status()
    running = claim(api, name, queue_name=queue)
    held = waiting(api, task if running["id"] != task["id"] else labelled)
    assert held["reason"] == "handler_cap" and (held["running"], held["cap"]) == (1, 1), held
    api.post(f"/queues/{queue}/pause").raise_for_status()
    assert waiting(api, task if running["id"] != task["id"] else labelled)["reason"] == "paused"
    held = waiting(api, running)
    assert held["reason"] == "running" and held["worker_id"] == running["lease"]["worker_id"]
    assert held["lease_expires_at"] == running["lease"]["expires_at"]
    api.post(f"/workers/tasks/{running['id']}/complete",
             json={"lease_id": running["lease"]["id"], "output": 1}).raise_for_status()  # fmt: skip
    assert waiting(api, running)["reason"] == "finished"


def test_a_task_in_retry_backoff_and_a_claimable_one_P_OBS_7(api: httpx.Client, name: str) -> None:
    task = enqueue(api, name, retry={"initial_backoff_ms": 60_000, "jitter": 0})
    lease = claim(api, name)["lease"]["id"]
    api.post(f"/workers/tasks/{task['id']}/fail",
             json={"lease_id": lease, "error": "x", "retryable": True}).raise_for_status()  # fmt: skip
    held = waiting(api, task)
    assert held["reason"] == "retry_backoff" and held["until"], held


def test_a_task_whose_handler_is_polled_is_claimable_P_OBS_7(start_server, name: str) -> None:
    """A worker polled for the handler within one heartbeat interval: it is waited for."""
    server = start_server(**{"heartbeat-interval-ms": 5000})
    with httpx.Client(base_url=server.url) as api:
        r = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 0})
        assert r.status_code == 204, r.text
        held = waiting(api, enqueue(api, name))
        assert held["reason"] == "claimable" and held["pollers"] == 1, held
