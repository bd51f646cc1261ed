"""Instance concurrency keys over HTTP (P-KEY-7), on both backends: at most
max_concurrency instances of a key run at once, from start to end; the others are
`running` with no block started and say why; an ending instance starts the next in start
order; cancel and retry keep the count; instance keys and task keys are apart."""

from __future__ import annotations

import httpx
from conftest import assert_problem, enqueue
from test_workflows import claim_step, define, fail, start, wait, work


def get(api: httpx.Client, inst: dict) -> dict:
    r = api.get(f"/instances/{inst['id']}")
    assert r.status_code == 200, r.text
    return r.json()


def idle(api: httpx.Client, handler: str) -> None:
    """No task of the handler is claimable now."""
    r = api.post("/workers/tasks/poll", json={"handler_names": [handler], "wait_ms": 0})
    assert r.status_code == 204, r.text


def assert_waits(api: httpx.Client, inst: dict, running: int, cap: int) -> dict:
    body = get(api, inst)
    assert body["status"] == "running", body  # never `held` on the wire
    assert all(s["status"] == "pending" and s["task_id"] is None for s in body["steps"]), body
    waiting = body["waiting"]
    assert waiting["reason"] == "concurrency_key", waiting
    assert (waiting["running"], waiting["cap"]) == (running, cap), waiting
    assert body["concurrency_key"] in waiting["detail"]
    return body


def test_instances_past_the_limit_wait_and_start_in_order_P_KEY_7(
    api: httpx.Client, name: str
) -> None:
    define(api, name, [{"id": "only", "handler": name}])
    key = name + "-customer"
    first = start(api, name, concurrency_key=key)
    second = start(api, name, concurrency_key=key)
    third = start(api, name, concurrency_key=key)
    assert (first["concurrency_key"], first["max_concurrency"]) == (key, 1)
    assert first["steps"][0]["status"] == "running" and "waiting" not in get(api, first)
    assert_waits(api, second, 1, 1)
    listed = api.get("/instances", params={"sequence": name, "status": "running"}).json()
    assert {i["id"] for i in listed["instances"]} == {first["id"], second["id"], third["id"]}
    assert {i["status"] for i in listed["instances"]} == {"running"}
    same_name_task = enqueue(api, name + "_t", concurrency_key=key)  # task keys are apart
    assert claim_step(api, name + "_t")["id"] == same_name_task["id"]
    plain = start(api, name)  # no key: starts at once
    work(api, name, lambda p: "a")  # first's step: the oldest task of the handler
    assert wait(api, first)["status"] == "completed"
    body = get(api, second)
    assert body["steps"][0]["status"] == "running" and "waiting" not in body, body
    assert_waits(api, third, 1, 1)
    for _ in range(2):
        work(api, name, lambda p: "b")
    assert wait(api, plain)["status"] == wait(api, second)["status"] == "completed"
    work(api, name, lambda p: "c")
    assert wait(api, third)["status"] == "completed"
    idle(api, name)


def test_a_limit_of_two_runs_two_and_each_start_states_its_own_P_KEY_7(
    api: httpx.Client, name: str
) -> None:
    define(api, name, [{"id": "s", "handler": name}])
    key = name + "-k"
    runs = [start(api, name, concurrency_key=key, max_concurrency=2) for _ in range(3)]
    assert_waits(api, runs[2], 2, 2)
    wide = start(api, name, concurrency_key=key, max_concurrency=4)  # P-KEY-4's rule
    assert "waiting" not in get(api, wide)
    work(api, name, lambda p: None)
    assert wait(api, runs[0])["status"] == "completed"
    assert_waits(api, runs[2], 2, 2)  # runs[1] and `wide` still hold two slots
    work(api, name, lambda p: None)
    assert wait(api, runs[1])["status"] == "completed"
    assert "waiting" not in get(api, runs[2])


def test_cancel_frees_a_slot_and_a_cancelled_waiting_instance_frees_none_P_KEY_7(
    api: httpx.Client, name: str
) -> None:
    define(api, name, [{"id": "s", "handler": name}])
    key = name + "-k"
    holder, waiter, last = (start(api, name, concurrency_key=key) for _ in range(3))
    r = api.post(f"/instances/{waiter['id']}/cancel", json={"reason": "not needed"})
    assert r.status_code == 200 and r.json()["status"] == "cancelled", r.text
    assert_waits(api, last, 1, 1)  # the waiter held no slot
    r = api.post(f"/instances/{holder['id']}/cancel", json={"reason": "stop"})
    assert r.status_code == 200, r.text
    body = get(api, last)
    assert body["steps"][0]["status"] == "running" and "waiting" not in body, body
    task = claim_step(api, name)
    assert task["context"]["instance_id"] == last["id"]


def test_a_retried_instance_waits_for_a_slot_then_resumes_P_KEY_7(
    api: httpx.Client, name: str
) -> None:
    define(api, name, [{"id": "a", "handler": name}, {"id": "b", "handler": name + "_b"}])
    key = name + "-k"
    broken = start(api, name, concurrency_key=key)
    later = start(api, name, concurrency_key=key)
    work(api, name, lambda p: 1)
    fail(api, name + "_b")  # broken's step b fails it: its slot goes to `later`
    assert wait(api, broken)["status"] == "failed"
    assert get(api, later)["steps"][0]["status"] == "running"
    r = api.post(f"/instances/{broken['id']}/retry")
    assert r.status_code == 200 and r.json()["status"] == "running", r.text
    body = get(api, broken)
    assert body["waiting"]["reason"] == "concurrency_key", body
    assert body["steps"][0]["status"] == "completed"  # outputs stay (P-WF-8)
    work(api, name, lambda p: 2)
    work(api, name + "_b", lambda p: 3)
    assert wait(api, later)["status"] == "completed"
    body = get(api, broken)
    assert "waiting" not in body and body["steps"][1]["status"] == "running", body
    work(api, name + "_b", lambda p: 4)
    assert wait(api, broken)["status"] == "completed"


def test_max_concurrency_without_a_key_is_422_P_KEY_7(api: httpx.Client, name: str) -> None:
    define(api, name, [{"id": "s", "handler": name}])
    r = api.post("/instances", json={"sequence": name, "max_concurrency": 2})
    assert_problem(r, 422, "validation_error")
    assert r.json()["errors"][0]["pointer"] == "/max_concurrency"
    r = api.post("/instances", json={"sequence": name, "concurrency_key": ""})
    assert_problem(r, 422, "validation_error")
