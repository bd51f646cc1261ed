"""Queue controls: pause and resume (P-CTRL-1), running caps (P-CTRL-2), the controls in
GET /queues (P-CTRL-3) and the blocked reasons and gauges (P-OBS-4), on both backends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx
from conftest import assert_problem, enqueue, eventually
from test_long_poll import _waiting

from orch8_server.testing import RunningServer


def _poll(api: httpx.Client, handler: str, queue: str, **fields: object) -> httpx.Response:
    body = {"handler_names": [handler], "queue_name": queue, "wait_ms": 0, **fields}
    return api.post("/workers/tasks/poll", json=body)


def _row(api: httpx.Client, queue: str, handler: str) -> dict:
    stats = api.get("/queues", params={"queue_name": queue}).json()
    return next(r for r in stats["queues"] if r["handler_name"] == handler)


def _long_poll(url: str, body: dict) -> tuple[threading.Thread, list[httpx.Response]]:
    got: list[httpx.Response] = []

    def run() -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            got.append(client.post("/workers/tasks/poll", json=body))

    thread = threading.Thread(target=run)
    thread.start()
    return thread, got


def test_a_paused_queue_hands_out_nothing_until_resumed(
    api: httpx.Client, server: RunningServer, name: str
) -> None:
    """P-CTRL-1: paused, the queue keeps accepting tasks but no poll claims them and a
    waiting poll stays parked; resume wakes it at once. Pause and resume are idempotent."""
    queue = f"{name}-q"
    enqueue(api, name, queue_name=queue)
    r = api.post(f"/queues/{queue}/pause")
    assert r.status_code == 200, r.text
    paused = r.json()
    assert paused["paused"] is True and paused["paused_at"] and paused["queue_name"] == queue
    assert api.post(f"/queues/{queue}/pause").json()["paused_at"] == paused["paused_at"]
    assert _poll(api, name, queue).status_code == 204
    # A waiting poll is not woken by the paused queue's new work and runs out its wait.
    started = time.monotonic()
    thread, got = _long_poll(
        server.url, {"handler_names": [name], "queue_name": queue, "wait_ms": 1500}
    )
    eventually(lambda: _waiting(api) >= 1)
    enqueue(api, name, queue_name=queue)
    thread.join(10)
    assert got[0].status_code == 204 and time.monotonic() - started >= 1.4
    # Another queue of the same multi-queue poll still delivers.
    other = enqueue(api, name, queue_name=f"{name}-other")
    body = {"handler_names": [name], "queue_names": [queue, f"{name}-other"], "wait_ms": 0}
    r = api.post("/workers/tasks/poll", json=body)
    assert r.status_code == 200 and r.json()["id"] == other["id"]
    # Resume wakes a waiting poll at once.
    thread, got = _long_poll(
        server.url, {"handler_names": [name], "queue_name": queue, "wait_ms": 8000}
    )
    eventually(lambda: _waiting(api) >= 1)
    started = time.monotonic()
    resumed = api.post(f"/queues/{queue}/resume").json()
    assert resumed["paused"] is False and resumed["paused_at"] is None
    thread.join(10)
    assert got[0].status_code == 200 and time.monotonic() - started < 4.0  # woken, not 8 s
    assert api.post(f"/queues/{queue}/resume").json()["paused"] is False
    assert _poll(api, name, queue).status_code == 200


def test_a_pause_survives_a_restart(start_server: Callable[..., RunningServer], name: str) -> None:
    """P-CTRL-1: the controls are stored in the database."""
    server = start_server()
    queue = f"{name}-q"
    with httpx.Client(base_url=server.url, timeout=10) as api:
        enqueue(api, name, queue_name=queue)
        api.post(f"/queues/{queue}/pause").raise_for_status()
        api.put(f"/handlers/{name}/limit", json={"max_running": 3}).raise_for_status()
    server.restart()
    with httpx.Client(base_url=server.url, timeout=10) as api:
        assert _poll(api, name, queue).status_code == 204
        stats = api.get("/queues").json()
        assert [c["queue_name"] for c in stats["queue_controls"]] == [queue]
        assert [(c["handler_name"], c["max_running"]) for c in stats["handler_controls"]] == [
            (name, 3)
        ]
        api.post(f"/queues/{queue}/resume").raise_for_status()
        assert _poll(api, name, queue).status_code == 200


def test_a_queue_cap_limits_running_tasks_and_a_finished_task_frees_a_slot(
    api: httpx.Client, server: RunningServer, name: str
) -> None:
    """P-CTRL-2: a claim takes at most cap - running; when a capped task stops running
    a waiting poll is woken; null removes the cap."""
    queue = f"{name}-q"
    for _ in range(5):
        enqueue(api, name, queue_name=queue)
    r = api.put(f"/queues/{queue}/limit", json={"max_running": 2})
    assert r.status_code == 200 and r.json()["max_running"] == 2, r.text
    batch = api.post(
        "/workers/tasks/poll/batch",
        json={"handler_names": [name], "queue_name": queue, "batch_size": 10, "wait_ms": 0},
    ).json()["tasks"]
    assert len(batch) == 2
    assert _poll(api, name, queue).status_code == 204
    row = _row(api, queue, name)
    assert (row["queue_max_running"], row["blocked"], row["running"]) == (2, "queue_cap", 2)
    thread, got = _long_poll(
        server.url, {"handler_names": [name], "queue_name": queue, "wait_ms": 8000}
    )
    eventually(lambda: _waiting(api) >= 1)
    started = time.monotonic()
    done = api.post(
        f"/workers/tasks/{batch[0]['id']}/complete", json={"lease_id": batch[0]["lease"]["id"]}
    )
    assert done.status_code == 200, done.text
    thread.join(10)
    assert got[0].status_code == 200 and time.monotonic() - started < 4.0  # woken, not 8 s
    assert _poll(api, name, queue).status_code == 204
    assert (
        api.put(f"/queues/{queue}/limit", json={"max_running": None}).json()["max_running"] is None
    )
    assert _poll(api, name, queue).status_code == 200
    assert _row(api, queue, name)["queue_max_running"] is None


def test_a_reaped_capped_task_wakes_the_poll_the_cap_held_back(
    api: httpx.Client, server: RunningServer, name: str
) -> None:
    """P-CTRL-2 with P-LEASE-6: a capped task whose lease expires and that the reaper
    fails for good frees its slot, and the poll the cap held back is woken at once, not
    at the end of its wait."""
    queue = f"{name}-q"
    enqueue(api, name, queue_name=queue, retry={"max_attempts": 1})
    assert api.put(f"/queues/{queue}/limit", json={"max_running": 1}).status_code == 200
    held = _poll(api, name, queue, lease_ms=300)
    assert held.status_code == 200, held.text
    enqueue(api, name, queue_name=queue)
    started = time.monotonic()
    thread, got = _long_poll(
        server.url, {"handler_names": [name], "queue_name": queue, "wait_ms": 8000}
    )
    thread.join(12)
    assert got[0].status_code == 200, got[0].text
    assert time.monotonic() - started < 4.0  # the lease (0.3 s) + a reaper tick, not 8 s
    assert api.get(f"/tasks/{held.json()['id']}").json()["status"] == "failed"


def test_a_handler_cap_holds_across_queues(api: httpx.Client, name: str) -> None:
    """P-CTRL-2: a handler's cap counts its running tasks on every queue."""
    for queue in ("a", "b"):
        for _ in range(2):
            enqueue(api, name, queue_name=f"{name}-{queue}")
    r = api.put(f"/handlers/{name}/limit", json={"max_running": 3})
    assert r.json() == {**r.json(), "handler_name": name, "max_running": 3, "running": 0}
    assert _poll(api, name, f"{name}-a").status_code == 200
    batch = api.post(
        "/workers/tasks/poll/batch",
        json={
            "handler_names": [name],
            "queue_names": [f"{name}-a", f"{name}-b"],
            "batch_size": 10,
            "wait_ms": 0,
        },
    ).json()["tasks"]
    assert len(batch) == 2
    row = _row(api, f"{name}-b", name)
    assert (row["handler_max_running"], row["blocked"]) == (3, "handler_cap")
    control = next(
        h for h in api.get("/queues").json()["handler_controls"] if h["handler_name"] == name
    )
    assert control["running"] == 3
    metrics = api.get("/metrics").text
    assert f'orch8_handler_max_running{{handler="{name}",tenant="default"}} 3.0' in metrics
    assert (
        f'orch8_queue_blocked{{handler="{name}",queue="{name}-b",reason="handler_cap",tenant="default"}} 1.0'
        in metrics
    )
    api.put(f"/handlers/{name}/limit", json={"max_running": None}).raise_for_status()
    assert _poll(api, name, f"{name}-b").status_code == 200


def test_limits_refuse_bad_input(api: httpx.Client, name: str) -> None:
    """RunningLimit: max_running is required, an integer >= 1 or null."""
    for body in ({}, {"max_running": 0}, {"max_running": "2"}, {"max_running": 2, "x": 1}):
        assert_problem(api.put(f"/queues/{name}/limit", json=body), 422, "validation_error")
        assert_problem(api.put(f"/handlers/{name}/limit", json=body), 422, "validation_error")
    assert_problem(api.post("/queues/bad%20name/pause"), 422, "validation_error")
    assert_problem(api.post("/queues//pause"), 422, "validation_error")


def test_names_with_a_slash_can_be_controlled(api: httpx.Client, name: str) -> None:
    """QueueName and HandlerName allow "/": their controls are reachable too."""
    queue, handler = f"team/{name}", f"team/{name}-h"
    r = api.post(f"/queues/{queue}/pause")
    assert r.status_code == 200 and r.json()["queue_name"] == queue, r.text
    assert api.post(f"/queues/{queue}/resume").json()["paused"] is False
    assert api.put(f"/queues/{queue}/limit", json={"max_running": 1}).json()["max_running"] == 1
    r = api.put(f"/handlers/{handler}/limit", json={"max_running": 2})
    assert r.status_code == 200 and r.json()["handler_name"] == handler, r.text
    api.put(f"/queues/{queue}/limit", json={"max_running": None}).raise_for_status()
    api.put(f"/handlers/{handler}/limit", json={"max_running": None}).raise_for_status()
    r = api.get(f"/queues/{queue}/history", params={"minutes": 2})  # P-OBS-5
    assert r.status_code == 200 and r.json()["queue_name"] == queue, r.text


def test_queue_rows_and_gauges_say_why_a_queue_is_not_draining(
    api: httpx.Client, name: str
) -> None:
    """P-OBS-4, P-CTRL-3: the row's controls and blocked reason, the controls lists and
    the orch8_queue_* gauges; blocked is null with nothing pending."""
    queue = f"{name}-q"
    enqueue(api, name, queue_name=queue)
    row = _row(api, queue, name)
    assert row == {**row, "paused": False, "blocked": None, "unroutable": 0,
                   "queue_max_running": None, "handler_max_running": None}  # fmt: skip
    api.post(f"/queues/{queue}/pause").raise_for_status()
    api.put(f"/queues/{queue}/limit", json={"max_running": 7}).raise_for_status()
    row = _row(api, queue, name)
    assert (row["paused"], row["blocked"], row["queue_max_running"]) == (True, "paused", 7)
    stats = api.get("/queues", params={"queue_name": queue}).json()
    assert stats["queue_controls"] == [
        {
            **stats["queue_controls"][0],
            "queue_name": queue,
            "paused": True,
            "max_running": 7,
            "running": 0,
        }
    ]
    metrics = api.get("/metrics").text
    assert f'orch8_queue_paused{{queue="{queue}",tenant="default"}} 1.0' in metrics
    assert f'orch8_queue_max_running{{queue="{queue}",tenant="default"}} 7.0' in metrics
    assert (
        f'orch8_queue_blocked{{handler="{name}",queue="{queue}",reason="paused",tenant="default"}} 1.0'
        in metrics
    )
    api.post(f"/queues/{queue}/resume").raise_for_status()
    api.put(f"/queues/{queue}/limit", json={"max_running": None}).raise_for_status()
    assert _poll(api, name, queue).status_code == 200
    assert _row(api, queue, name)["blocked"] is None
    stats = api.get("/queues").json()
    assert queue not in [c["queue_name"] for c in stats["queue_controls"]]
    assert f'orch8_queue_paused{{queue="{queue}",tenant="default"}} 0.0' in api.get("/metrics").text
