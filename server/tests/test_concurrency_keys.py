"""Concurrency keys over HTTP (P-KEY-1..6), on both backends: at most max_concurrency tasks
of a key hold slots, held tasks block nothing, a freed slot goes to the next held task in
claim order, and the wire never says `held`."""

from __future__ import annotations

import threading
from typing import Any

import httpx
from conftest import assert_problem, enqueue
from test_workflows import start, wait


def keyed(api: httpx.Client, handler: str, key: str, **fields: Any) -> dict:
    return enqueue(api, handler, concurrency_key=key, **fields)


def poll(api: httpx.Client, handler: str, **fields: Any) -> dict | None:
    r = api.post("/workers/tasks/poll", json={"handler_names": [handler], "wait_ms": 0, **fields})
    assert r.status_code in (200, 204), r.text
    return r.json() if r.status_code == 200 else None


def complete(api: httpx.Client, task: dict) -> None:
    r = api.post(f"/workers/tasks/{task['id']}/complete",
                 json={"lease_id": task["lease"]["id"], "output": None})  # fmt: skip
    assert r.status_code == 200, r.text


def test_held_tasks_wait_for_a_slot_and_block_nothing_P_KEY_1_2(
    api: httpx.Client, name: str
) -> None:
    key = name + "-customer"
    first = keyed(api, name, key)
    second = keyed(api, name, key)
    plain = enqueue(api, name)  # behind the held one in FIFO order
    assert first["concurrency_key"] == key and first["max_concurrency"] == 1
    assert second["status"] == "pending" and plain["concurrency_key"] is None
    got = [poll(api, name), poll(api, name), poll(api, name)]
    assert [t["id"] if t else None for t in got] == [first["id"], plain["id"], None]
    body = api.get(f"/tasks/{second['id']}").json()
    assert body["status"] == "pending", body  # P-KEY-6: never `held` on the wire
    waiting = body["waiting"]
    assert waiting["reason"] == "concurrency_key", waiting
    assert (waiting["running"], waiting["cap"]) == (1, 1) and key in waiting["detail"]
    listed = api.get("/tasks", params={"status": "pending", "handler_name": name}).json()
    assert [t["id"] for t in listed["tasks"]] == [second["id"]]
    assert all(t["status"] == "pending" for t in listed["tasks"])
    queue = api.get("/queues", params={"queue_name": "default"}).json()
    row = next(r for r in queue["queues"] if r["handler_name"] == name)
    assert row["pending"] == 1 and row["running"] == 2, row  # P-KEY-6: counted as pending
    assert row["held"] == 1 and row["blocked"] == "held", row  # P-OBS-4: every pending is held


def test_a_freed_slot_goes_to_the_next_task_in_claim_order_P_KEY_3(
    api: httpx.Client, name: str
) -> None:
    key = name + "-k"
    holder = keyed(api, name, key)
    later = keyed(api, name, key)
    urgent = keyed(api, name, key, priority=-1)  # P-ORDER-1: ahead of `later`
    running = poll(api, name)
    assert running is not None and running["id"] == holder["id"]
    assert poll(api, name) is None
    complete(api, running)
    nxt = poll(api, name)
    assert nxt is not None and nxt["id"] == urgent["id"]
    r = api.post(f"/tasks/{nxt['id']}/cancel", json={"reason": "done with it"})
    assert r.status_code == 200, r.text
    last = poll(api, name)
    assert last is not None and last["id"] == later["id"]


def test_a_retry_backoff_frees_the_slot_and_the_retry_queues_again_P_KEY_3(
    api: httpx.Client, name: str
) -> None:
    key = name + "-k"
    flaky = keyed(api, name, key, retry={"max_attempts": 3, "initial_backoff_ms": 60_000,
                                         "jitter": 0})  # fmt: skip
    other = keyed(api, name, key)
    running = poll(api, name)
    assert running is not None and running["id"] == flaky["id"]
    r = api.post(f"/workers/tasks/{flaky['id']}/fail",
                 json={"lease_id": running["lease"]["id"], "error": "busy", "retryable": True})  # fmt: skip
    assert r.status_code == 200 and r.json()["status"] == "scheduled", r.text
    nxt = poll(api, name)  # the backoff holds no slot
    assert nxt is not None and nxt["id"] == other["id"]
    # Released without delay: it queues for a slot again, and gets it back (oldest first).
    r = api.post(f"/workers/tasks/{other['id']}/release", json={"lease_id": nxt["lease"]["id"]})
    assert r.status_code == 200 and r.json()["status"] == "pending", r.text
    again = poll(api, name)
    assert again is not None and again["id"] == other["id"]


def test_max_concurrency_admits_that_many_P_KEY_4(api: httpx.Client, name: str) -> None:
    key = name + "-k"
    tasks = [keyed(api, name, key, max_concurrency=2) for _ in range(4)]
    claimed = api.post("/workers/tasks/poll/batch",
                       json={"handler_names": [name], "wait_ms": 0, "batch_size": 10}).json()  # fmt: skip
    assert [t["id"] for t in claimed["tasks"]] == [t["id"] for t in tasks[:2]]


def test_a_limit_without_a_key_is_refused_P_KEY_5(api: httpx.Client, name: str) -> None:
    r = api.post("/tasks", json={"handler_name": name, "max_concurrency": 2})
    body = assert_problem(r, 422, "validation_error")
    assert body["errors"][0]["pointer"] == "/max_concurrency"
    r = api.post("/tasks/batch", json={"tasks": [{"handler_name": name},
                                                 {"handler_name": name, "max_concurrency": 2}]})  # fmt: skip
    body = assert_problem(r, 422, "validation_error")
    assert body["errors"][0]["pointer"] == "/tasks/1/max_concurrency"


def test_a_held_task_expires_and_can_be_cancelled_P_KEY_6(api: httpx.Client, name: str) -> None:
    key = name + "-k"
    holder = keyed(api, name, key)
    doomed = keyed(api, name, key, good_until="2000-01-01T00:00:00Z")
    assert doomed["status"] == "expired"  # past its deadline on arrival (P-EXPIRE-1)
    held = keyed(api, name, key)
    r = api.post(f"/tasks/{held['id']}/cancel", json={})
    assert r.status_code == 200 and r.json()["status"] == "cancelled", r.text
    running = poll(api, name)
    assert running is not None and running["id"] == holder["id"]
    complete(api, running)
    assert poll(api, name) is None  # nothing left of the key


def test_a_waiting_poll_is_woken_when_a_slot_frees_P_KEY_3(api: httpx.Client, name: str) -> None:
    key = name + "-k"
    keyed(api, name, key)
    held = keyed(api, name, key)
    running = poll(api, name)
    assert running is not None
    got: list[httpx.Response] = []
    # Shorter than the stranded-key sweep's period (reaper.KEYS_S): the completion's own
    # admission must wake it, not the safety net.
    waiter = threading.Thread(target=lambda: got.append(api.post(
        "/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 3_000})))  # fmt: skip
    waiter.start()
    with httpx.Client(base_url=str(api.base_url), timeout=20) as other:
        complete(other, running)
    waiter.join(timeout=25)
    assert got and got[0].status_code == 200, got
    assert got[0].json()["id"] == held["id"]


def test_a_workflow_steps_key_is_rendered_from_the_instance_P_KEY_5(
    api: httpx.Client, name: str
) -> None:
    """A for_each fans out 3 tasks of one customer's key (limit 1): one runs at a time; a
    second instance of another customer is not held behind them."""
    r = api.post("/sequences", json={"name": name, "blocks": [
        {"type": "for_each", "id": "each", "collection": "context.data.items", "body": [
            {"type": "step", "id": "sync", "handler": name, "params": {"item": "{{item}}"},
             "concurrency_key": "crm-{{context.data.customer}}", "max_concurrency": 1}]}]})  # fmt: skip
    assert r.status_code == 201, r.text
    one = start(api, name, context={"data": {"customer": "c1", "items": [1, 2, 3]}})
    two = start(api, name, context={"data": {"customer": "c2", "items": [9]}})
    got = api.post("/workers/tasks/poll/batch", json={
        "handler_names": [name], "wait_ms": 0, "batch_size": 10}).json()["tasks"]  # fmt: skip
    assert sorted(t["params"]["item"] for t in got) == [1, 9], got
    task = api.get(f"/tasks/{got[0]['id']}").json()
    assert task["concurrency_key"] in ("crm-c1", "crm-c2") and task["max_concurrency"] == 1
    for _ in range(3):
        for t in got:
            complete(api, t)
        got = api.post("/workers/tasks/poll/batch", json={
            "handler_names": [name], "wait_ms": 0, "batch_size": 10}).json()["tasks"]  # fmt: skip
        assert len(got) <= 1, got
    assert wait(api, one)["status"] == "completed" and wait(api, two)["status"] == "completed"


def test_a_step_key_that_is_not_a_string_fails_the_step_P_KEY_5(
    api: httpx.Client, name: str
) -> None:
    r = api.post("/sequences", json={"name": name, "blocks": [
        {"type": "step", "id": "sync", "handler": name,
         "concurrency_key": "{{context.data.customer}}"}]})  # fmt: skip
    assert r.status_code == 201, r.text
    done = wait(api, start(api, name, context={"data": {"customer": 42}}))
    assert done["status"] == "failed" and done["error"]["code"] == "bad_reference", done
    r = api.post("/sequences", json={"name": name + "_x", "blocks": [
        {"type": "step", "id": "s", "handler": name, "max_concurrency": 2}]})  # fmt: skip
    body = assert_problem(r, 422, "validation_error")
    assert body["errors"][0]["pointer"] == "/blocks/0/max_concurrency", body
