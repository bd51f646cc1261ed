"""Label routing (P-LABEL-1..3): a task's required_labels go only to a registered, live
worker whose labels hold them; labels filter and never block; unroutable tasks show."""

from __future__ import annotations

import httpx
from conftest import assert_problem, enqueue


def _register(api: httpx.Client, worker_id: str, labels: dict[str, str]) -> None:
    r = api.post("/workers", json={"worker_id": worker_id, "labels": labels})
    assert r.status_code == 200, r.text


def _poll(api: httpx.Client, handler: str, worker_id: str | None = None) -> httpx.Response:
    body: dict = {"handler_names": [handler], "wait_ms": 0}
    if worker_id is not None:
        body["worker_id"] = worker_id
    return api.post("/workers/tasks/poll", json=body)


def _row(api: httpx.Client, handler: str) -> dict:
    rows = api.get("/queues", params={"queue_name": "default"}).json()["queues"]
    return next(r for r in rows if r["handler_name"] == handler)


def test_a_labelled_task_goes_only_to_a_worker_with_its_labels(
    api: httpx.Client, name: str
) -> None:
    """P-LABEL-1: no worker_id, an unregistered worker_id or a worker without the pair
    claims nothing; a registered worker holding every pair (and more) claims it."""
    task = enqueue(api, name, required_labels={"gpu": name, "zone": "eu-1"})
    assert task["required_labels"] == {"gpu": name, "zone": "eu-1"}
    assert enqueue(api, f"{name}-plain")["required_labels"] == {}
    assert _poll(api, name).status_code == 204
    assert _poll(api, name, f"{name}-curl").status_code == 204
    _register(api, f"{name}-cpu", {"gpu": "no", "zone": "eu-1"})
    assert _poll(api, name, f"{name}-cpu").status_code == 204
    _register(api, f"{name}-gpu", {"gpu": name, "zone": "eu-1", "extra": "x"})
    r = _poll(api, name, f"{name}-gpu")
    assert r.status_code == 200 and r.json()["id"] == task["id"]
    assert api.get(f"/tasks/{task['id']}").json()["required_labels"] == {
        "gpu": name,
        "zone": "eu-1",
    }


def test_labels_filter_and_never_block_the_tasks_behind(api: httpx.Client, name: str) -> None:
    """P-LABEL-2: a task this poll may not take does not hold back the ones behind it,
    in single and batch polls."""
    enqueue(api, name, priority=-5, required_labels={"gpu": name})
    plain = [enqueue(api, name) for _ in range(2)]
    r = _poll(api, name)
    assert r.status_code == 200 and r.json()["id"] == plain[0]["id"]
    batch = api.post(
        "/workers/tasks/poll/batch", json={"handler_names": [name], "wait_ms": 0, "batch_size": 5}
    ).json()["tasks"]
    assert [t["id"] for t in batch] == [plain[1]["id"]]


def test_an_unroutable_task_shows_and_goes_to_a_worker_registering_later(
    api: httpx.Client, name: str
) -> None:
    """P-LABEL-3, P-OBS-4: pending, counted in `unroutable` (blocked=unroutable and the
    gauge); a matching worker that registers later claims it. A worker's labels are
    those of its latest registration."""
    task = enqueue(api, name, required_labels={"pool": name})
    row = _row(api, name)
    assert (row["pending"], row["unroutable"], row["blocked"]) == (1, 1, "unroutable")
    metrics = api.get("/metrics").text
    assert (
        f'orch8_queue_unroutable{{handler="{name}",queue="default",tenant="default"}} 1.0'
        in metrics
    )
    assert (
        f'orch8_queue_blocked{{handler="{name}",queue="default",reason="unroutable",tenant="default"}} 1.0'
        in metrics
    )
    worker = f"{name}-late"
    _register(api, worker, {})
    assert _poll(api, name, worker).status_code == 204  # remembered labels: none
    _register(api, worker, {"pool": name})  # the latest registration counts at once
    row = _row(api, name)
    assert (row["unroutable"], row["blocked"]) == (0, None)
    r = _poll(api, name, worker)
    assert r.status_code == 200 and r.json()["id"] == task["id"]


def test_required_labels_are_validated(api: httpx.Client, name: str) -> None:
    """NewTask.required_labels: string values, names of the label pattern."""
    for labels in ({"gpu": 1}, {"bad key": "x"}, ["gpu"]):
        r = api.post("/tasks", json={"handler_name": name, "required_labels": labels})
        assert_problem(r, 422, "validation_error")
