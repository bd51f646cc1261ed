"""Batch instance start (P-WF-14) over HTTP, on both backends: up to 100 starts in one
transaction, in order, all or none; problems name the item; idempotency keys per item
(against stored instances and earlier items); instance concurrency keys counted across
the batch (P-KEY-7); the first steps of all items are one enqueue for the limits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from conftest import RunningServer, assert_problem
from test_workflows import claim_step, define, start, wait, work

Start = Callable[..., RunningServer]


def start_batch(api: httpx.Client, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    r = api.post("/instances/batch", json={"instances": items})
    assert r.status_code == 201, r.text
    instances: list[dict[str, Any]] = r.json()["instances"]
    assert len(instances) == len(items)
    return instances


def listed(api: httpx.Client, sequence: str) -> list[dict[str, Any]]:
    r = api.get("/instances", params={"sequence": sequence, "limit": 500})
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["instances"]
    return found


def test_a_batch_starts_every_instance_in_order_with_its_first_step_P_WF_14(
    api: httpx.Client, name: str
) -> None:
    define(api, name, [
        {"id": "a", "handler": name, "params": {"n": {"$from": "input.n"}}},
        {"id": "b", "handler": name + "_b", "params": {"n": {"$from": "steps.a.output.n"}}},
    ])  # fmt: skip
    other = name + "-other"
    define(api, other, [{"id": "x", "handler": name + "_x"}])
    items = [{"sequence": name, "input": {"n": i}} for i in range(5)]
    items.insert(2, {"sequence": other, "context": {"data": {"n": 99}, "config": {"c": 1}}})
    started = start_batch(api, items)
    assert [i["sequence"] for i in started] == [name, name, other, name, name, name]
    assert [i["input"] for i in started] == [it.get("input", {"n": 99}) for it in items]
    assert started[2]["context"] == {"data": {"n": 99}, "config": {"c": 1}}
    assert len({i["id"] for i in started}) == 6
    for inst in started:  # each first step was dispatched in the start's transaction
        assert inst["status"] == "running"
        assert inst["steps"][0]["status"] == "running" and inst["steps"][0]["task_id"], inst
    # Every instance runs to its end, as a single start's would.
    for _ in range(5):
        work(api, name, lambda p: p)
        work(api, name + "_b", lambda p: p)
    work(api, name + "_x", lambda p: p)
    ends = [wait(api, inst) for inst in started]
    assert [e["status"] for e in ends] == ["completed"] * 6
    assert sorted(e["output"]["n"] for e in ends if e["sequence"] == name) == [0, 1, 2, 3, 4]


def test_one_bad_item_rejects_the_batch_and_names_the_item_P_WF_14(
    api: httpx.Client, name: str
) -> None:
    define(api, name, [{"id": "a", "handler": name}])
    good = {"sequence": name, "idempotency_key": name + "-good"}
    # A field error points into /instances/N.
    reserved = [good, {"sequence": name, "idempotency_key": "wf:mine"}]
    problem = assert_problem(
        api.post("/instances/batch", json={"instances": reserved}), 422, "validation_error"
    )
    assert problem["errors"][0]["pointer"] == "/instances/1/idempotency_key", problem
    assert problem["detail"].startswith("instances/1: "), problem
    no_key = [good, good, {"sequence": name, "max_concurrency": 2}]
    problem = assert_problem(
        api.post("/instances/batch", json={"instances": no_key}), 422, "validation_error"
    )
    assert problem["errors"][0]["pointer"] == "/instances/2/max_concurrency", problem
    differ = [{"sequence": name, "input": {"a": 1}, "context": {"data": {"a": 2}}}]
    problem = assert_problem(
        api.post("/instances/batch", json={"instances": differ}), 422, "validation_error"
    )
    assert problem["errors"][0]["pointer"] == "/instances/0/context/data", problem
    # Schema errors point into the item too (request validation).
    typo = [good, {"sequence": name, "inptu": {}}]
    problem = assert_problem(
        api.post("/instances/batch", json={"instances": typo}), 422, "validation_error"
    )
    assert any(e["pointer"].startswith("/instances/1") for e in problem["errors"]), problem
    # An unknown sequence or version is 404, naming the item.
    missing = [good, {"sequence": name + "-nope"}]
    problem = assert_problem(api.post("/instances/batch", json={"instances": missing}), 404,
                             "not_found")  # fmt: skip
    assert problem["detail"] == f"instances/1: no sequence {name}-nope", problem
    old = [good, {"sequence": name, "version": 7}]
    assert_problem(api.post("/instances/batch", json={"instances": old}), 404, "not_found")
    # Sizes: 1 to 100 items.
    assert_problem(api.post("/instances/batch", json={"instances": []}), 422, "validation_error")
    many = [{"sequence": name}] * 101
    assert_problem(api.post("/instances/batch", json={"instances": many}), 422, "validation_error")
    # Nothing of any refused batch was stored: not the good item, not its key, no task.
    assert listed(api, name) == []
    r = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 0})
    assert r.status_code == 204, r.text
    assert start_batch(api, [good])[0]["idempotency_key"] == name + "-good"


def test_idempotency_keys_apply_per_item_against_stored_and_earlier_items_P_WF_14(
    api: httpx.Client, name: str
) -> None:
    define(api, name, [{"id": "a", "handler": name}])
    first = start(api, name, input={"v": 1}, idempotency_key=name + "-1")
    items = [
        {"sequence": name, "input": {"v": 2}, "idempotency_key": name + "-1"},  # stored
        {"sequence": name, "input": {"v": 3}, "idempotency_key": name + "-2"},  # new
        {"sequence": name, "input": {"v": 4}, "idempotency_key": name + "-2"},  # earlier item
        {"sequence": name, "input": {"v": 5}},
    ]
    got = start_batch(api, items)
    assert got[0]["id"] == first["id"] and got[0]["input"] == {"v": 1}
    assert got[2]["id"] == got[1]["id"] and got[2]["input"] == {"v": 3}
    assert got[3]["id"] not in {first["id"], got[1]["id"]}
    # A replayed batch starts nothing new: its keyed items come back; one step task each.
    again = start_batch(api, items[:3])
    assert [i["id"] for i in again] == [i["id"] for i in got[:3]]
    assert len(listed(api, name)) == 3
    tasks = api.get("/tasks", params={"handler_name": name, "limit": 100}).json()["tasks"]
    assert len(tasks) == 3, tasks


def test_a_batch_counts_its_own_items_against_an_instance_key_P_KEY_7(
    api: httpx.Client, name: str
) -> None:
    define(api, name, [{"id": "only", "handler": name, "params": {"i": {"$from": "input.i"}}}])
    key = name + "-customer"
    items = [{"sequence": name, "input": {"i": i}, "concurrency_key": key,
              "max_concurrency": 2} for i in range(4)]  # fmt: skip
    started = start_batch(api, items)
    running = [i for i in started if i["steps"][0]["task_id"]]
    assert [i["input"]["i"] for i in running] == [0, 1], started  # in request order
    waiting = api.get(f"/instances/{started[2]['id']}").json()["waiting"]
    assert (waiting["reason"], waiting["running"], waiting["cap"]) == ("concurrency_key", 2, 2)
    # As each ends, the next in start order runs.
    seen = []
    for _ in range(4):
        task = claim_step(api, name)
        seen.append(task["params"]["i"])
        r = api.post(f"/workers/tasks/{task['id']}/complete",
                     json={"lease_id": task["lease"]["id"], "output": 1})  # fmt: skip
        assert r.status_code == 200, r.text
    assert seen == [0, 1, 2, 3]
    assert [wait(api, i)["status"] for i in started] == ["completed"] * 4


def test_the_first_steps_of_a_batch_are_one_enqueue_for_the_limits_P_BP_1_P_WF_14(
    start_server: Start, name: str
) -> None:
    server = start_server(**{"enqueue-rate": 0.5, "enqueue-burst": 3})
    with httpx.Client(base_url=server.url, timeout=20) as api:
        define(api, name, [{"id": "a", "handler": name}])
        # Four first steps at once can never pass a burst of 3: 422 at the batch.
        problem = assert_problem(
            api.post("/instances/batch", json={"instances": [{"sequence": name}] * 4}),
            422, "validation_error",
        )  # fmt: skip
        assert problem["errors"][0]["pointer"] == "/instances", problem
        assert "burst of 3" in problem["detail"]
        assert len(start_batch(api, [{"sequence": name}] * 2)) == 2  # 2 of 3 tokens
        refused = api.post("/instances/batch", json={"instances": [{"sequence": name}] * 2})
        assert_problem(refused, 429, "rate_limited")  # one token left, two asked
        assert len(listed(api, name)) == 2  # nothing of the refused batch stored
