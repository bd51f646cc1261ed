"""P-WF-5: a result advances its instance in the result's own transaction, so the next
step's task (or the instance's end) is visible the moment the result's reply is, on both
backends. No waiting here: a read right after the reply must see the advance (a pump that
advanced later would leave the instance behind, in most of the rounds at least)."""

from __future__ import annotations

import re
from typing import Any

import httpx

ROUNDS = 5


def _define(api: httpx.Client, name: str, steps: int = 2) -> None:
    body = {
        "name": name,
        "steps": [{"id": f"s{i}", "handler": f"{name}_{i}"} for i in range(steps)],
    }
    r = api.post("/sequences", json=body)
    assert r.status_code in (200, 201), r.text


def _start(api: httpx.Client, name: str) -> dict[str, Any]:
    r = api.post("/instances", json={"sequence": name})
    assert r.status_code == 201, r.text
    return r.json()


def _claim(api: httpx.Client, handler: str) -> dict[str, Any]:
    r = api.post("/workers/tasks/poll", json={"handler_names": [handler], "wait_ms": 5000})
    assert r.status_code == 200, r.text
    return r.json()


def _now(api: httpx.Client, inst: dict[str, Any]) -> dict[str, Any]:
    r = api.get(f"/instances/{inst['id']}")  # no wait_ms: what is committed right now
    assert r.status_code == 200, r.text
    return r.json()


def _next_step_dispatched(api: httpx.Client, inst: dict[str, Any]) -> None:
    now = _now(api, inst)
    assert now["steps"][0]["status"] == "completed", now
    assert now["steps"][1]["task_id"], now  # step 2's task exists already
    tasks = api.get("/tasks", params={"instance_id": inst["id"]}).json()["tasks"]
    assert len(tasks) == 2, tasks


def test_worker_complete_advances_in_its_transaction_P_WF_5(api: httpx.Client, name: str) -> None:
    _define(api, name)
    for _ in range(ROUNDS):
        inst = _start(api, name)
        task = _claim(api, f"{name}_0")
        r = api.post(f"/workers/tasks/{task['id']}/complete",
                     json={"lease_id": task["lease"]["id"], "output": 1})  # fmt: skip
        assert r.status_code == 200, r.text
        _next_step_dispatched(api, inst)


def test_batch_complete_advances_in_its_transaction_P_WF_5(api: httpx.Client, name: str) -> None:
    _define(api, name)
    insts = [_start(api, name) for _ in range(ROUNDS)]
    tasks = [_claim(api, f"{name}_0") for _ in insts]
    items = [{"task_id": t["id"], "lease_id": t["lease"]["id"], "output": 1} for t in tasks]
    r = api.post("/workers/tasks/complete/batch", json={"items": items})
    assert r.status_code == 200, r.text
    for inst in insts:
        _next_step_dispatched(api, inst)


def test_fail_single_and_batch_end_the_instance_in_their_transaction_P_WF_5(
    api: httpx.Client, name: str
) -> None:
    _define(api, name)
    for batch in (False, True):
        for _ in range(ROUNDS):
            inst = _start(api, name)
            task = _claim(api, f"{name}_0")
            item = {"lease_id": task["lease"]["id"], "error": "boom", "retryable": False}
            if batch:
                r = api.post("/workers/tasks/fail/batch",
                             json={"items": [{"task_id": task["id"], **item}]})  # fmt: skip
            else:
                r = api.post(f"/workers/tasks/{task['id']}/fail", json=item)
            assert r.status_code == 200, r.text
            assert _now(api, inst)["status"] == "failed"


def test_manual_results_and_cancel_advance_in_their_transaction_P_WF_5(
    api: httpx.Client, name: str
) -> None:
    _define(api, name)
    for _ in range(ROUNDS):
        inst = _start(api, name)
        task_id = api.get("/tasks", params={"instance_id": inst["id"]}).json()["tasks"][0]["id"]
        assert api.post(f"/tasks/{task_id}/complete", json={"output": 1}).status_code == 200
        _next_step_dispatched(api, inst)
        inst = _start(api, name)
        task_id = api.get("/tasks", params={"instance_id": inst["id"]}).json()["tasks"][0]["id"]
        assert api.post(f"/tasks/{task_id}/cancel", json={}).status_code == 200
        now = _now(api, inst)
        assert now["steps"][0]["status"] == "failed" and now["status"] == "failed", now


def test_step_tasks_count_as_enqueued_P_WF_5(api: httpx.Client, name: str) -> None:
    _define(api, name, steps=3)
    inst = _start(api, name)
    for i in range(3):
        task = _claim(api, f"{name}_{i}")
        r = api.post(f"/workers/tasks/{task['id']}/complete",
                     json={"lease_id": task["lease"]["id"], "output": i})  # fmt: skip
        assert r.status_code == 200, r.text
    assert _now(api, inst)["status"] == "completed"
    text = api.get("/metrics").text
    for i in range(3):
        pattern = rf'orch8_tasks_enqueued_total\{{[^}}]*handler="{name}_{i}"[^}}]*\}} 1\.0'
        assert re.search(pattern, text), (i, [ln for ln in text.splitlines() if name in ln])
