"""Producer and operator API: enqueue, idempotency, batch, get, list, cancel, retry, history."""

from __future__ import annotations

import httpx
from conftest import assert_problem, claim, enqueue


def test_enqueue_defaults(api: httpx.Client, name: str) -> None:
    task = enqueue(api, name)
    assert task["queue_name"] == "default" and task["priority"] == 0 and task["status"] == "pending"
    assert task["params"] == {} and task["context"] == {} and task["attempt"] == 0
    assert task["retry"] == {
        "max_attempts": 3,
        "initial_backoff_ms": 1000,
        "backoff_multiplier": 2.0,
        "max_backoff_ms": 300000,
        "jitter": 0.2,
    }
    got = api.get(f"/tasks/{task['id']}").json()
    assert got.pop("waiting")["reason"] == "no_poller"  # P-OBS-7: GET /tasks/{id} only
    assert task["id"].startswith("task_") and got == task


def test_idempotency_key_returns_the_existing_task(api: httpx.Client, name: str) -> None:
    """P-TASK-3."""
    first = api.post(
        "/tasks", json={"handler_name": name, "idempotency_key": name, "params": {"a": 1}}
    )
    again = api.post(
        "/tasks", json={"handler_name": name, "idempotency_key": name, "params": {"a": 2}}
    )
    assert first.status_code == 201 and again.status_code == 200
    assert again.json() == first.json()
    assert len(api.get("/tasks", params={"handler_name": name}).json()["tasks"]) == 1


def test_batch_enqueue_is_atomic_and_points_at_the_bad_item(api: httpx.Client, name: str) -> None:
    """P-TASK-2."""
    r = api.post(
        "/tasks/batch",
        json={"tasks": [{"handler_name": name}, {"handler_name": name, "priority": "hi"}]},
    )
    body = assert_problem(r, 422, "validation_error")
    assert body["errors"][0]["pointer"] == "/tasks/1/priority"
    assert api.get("/tasks", params={"handler_name": name}).json()["tasks"] == []
    r = api.post(
        "/tasks/batch",
        json={"tasks": [{"handler_name": name, "params": {"i": i}} for i in range(3)]},
    )
    assert r.status_code == 201 and [t["params"]["i"] for t in r.json()["tasks"]] == [0, 1, 2]


def test_list_filters_and_cursor_pagination(api: httpx.Client, name: str) -> None:
    ids = [enqueue(api, name, queue_name="list-" + name)["id"] for _ in range(5)]
    seen, cursor = [], None
    while True:
        params = {"handler_name": name, "limit": 2, **({"cursor": cursor} if cursor else {})}
        page = api.get("/tasks", params=params).json()
        seen += [t["id"] for t in page["tasks"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(ids))  # newest first, no duplicates, nothing skipped
    claim(api, name, queue_name="list-" + name, worker_id="lister")
    running = api.get("/tasks", params={"status": ["running"], "worker_id": "lister"}).json()[
        "tasks"
    ]
    assert [t["id"] for t in running] == [ids[0]]
    two = api.get(
        "/tasks",
        params=[("status", "running"), ("status", "pending"), ("queue_name", "list-" + name)],
    )
    assert len(two.json()["tasks"]) == 5
    stamps = {i: api.get(f"/tasks/{i}").json()["created_at"] for i in ids}
    created = stamps[ids[2]]
    after = api.get("/tasks", params={"handler_name": name, "created_after": created}).json()[
        "tasks"
    ]
    # strictly after: tasks created in the same millisecond as ids[2] are excluded too
    assert {t["id"] for t in after} == {i for i in ids if stamps[i] > created}
    assert ids[2] not in {t["id"] for t in after}
    assert_problem(api.get("/tasks", params={"cursor": "nonsense"}), 422, "validation_error")
    assert (
        api.get("/tasks", params={"handler_name": name, "cursor": "9" * 19}).json()["tasks"][0][
            "id"
        ]
        == ids[-1]
    )


def test_cancel_pending_running_and_finished(api: httpx.Client, name: str) -> None:
    """P-CANCEL-1 and P-CANCEL-2."""
    pending = enqueue(api, name)
    r = api.post(f"/tasks/{pending['id']}/cancel", json={"reason": "not needed"})
    assert r.json()["status"] == "cancelled" and r.json()["cancel_reason"] == "not needed"
    assert api.post(f"/tasks/{pending['id']}/cancel").status_code == 200  # no-op

    enqueue(api, name)
    running = claim(api, name)
    assert api.post(f"/tasks/{running['id']}/cancel").json()["status"] == "cancelled"
    lease = running["lease"]["id"]
    assert_problem(
        api.post(f"/workers/tasks/{running['id']}/heartbeat", json={"lease_id": lease}),
        409,
        "task_cancelled",
    )
    assert_problem(
        api.post(f"/workers/tasks/{running['id']}/complete", json={"lease_id": lease}),
        409,
        "task_cancelled",
    )
    assert_problem(
        api.post(f"/workers/tasks/{running['id']}/complete", json={}), 409, "task_cancelled"
    )
    assert_problem(
        api.post(f"/workers/tasks/{running['id']}/fail", json={"error": "x"}), 409, "task_cancelled"
    )
    assert api.get(f"/tasks/{running['id']}").json()["output"] is None

    enqueue(api, name)
    done = claim(api, name)
    api.post(f"/workers/tasks/{done['id']}/complete", json={"output": 1})
    assert_problem(api.post(f"/tasks/{done['id']}/cancel"), 409, "invalid_state")


def test_retry_failed_task_with_fresh_budget(api: httpx.Client, name: str) -> None:
    """P-RETRY-6."""
    task = enqueue(api, name, retry={"max_attempts": 1})
    claim(api, name)
    api.post(f"/workers/tasks/{task['id']}/fail", json={"error": "x", "retryable": True})
    assert api.get(f"/tasks/{task['id']}").json()["status"] == "failed"
    r = api.post(f"/tasks/{task['id']}/retry")
    assert (
        r.status_code == 200 and r.json()["status"] == "pending" and r.json()["max_attempts"] == 2
    )
    again = claim(api, name)
    assert again["attempt"] == 2
    assert_problem(api.post(f"/tasks/{task['id']}/retry"), 409, "invalid_state")
    delayed = enqueue(api, name)
    api.post(f"/tasks/{delayed['id']}/cancel")
    assert (
        api.post(f"/tasks/{delayed['id']}/retry", json={"delay_ms": 60000}).json()["status"]
        == "scheduled"
    )


def test_attempt_history(api: httpx.Client, name: str) -> None:
    task = enqueue(api, name, retry={"initial_backoff_ms": 0})
    claim(api, name, worker_id="w-a")
    api.post(f"/workers/tasks/{task['id']}/fail", json={"error": "first", "retryable": True})
    claim(api, name, worker_id="w-b")
    api.post(f"/workers/tasks/{task['id']}/complete", json={"output": None})
    history = api.get(f"/tasks/{task['id']}/attempts").json()["attempts"]
    assert [(a["attempt"], a["worker_id"], a["outcome"]) for a in history] == [
        (1, "w-a", "failed"),
        (2, "w-b", "completed"),
    ]
    assert history[0]["error"]["message"] == "first"


def test_unknown_task_is_404_everywhere(api: httpx.Client) -> None:
    for method, path, body in [
        ("GET", "/tasks/task_nope", None),
        ("POST", "/tasks/task_nope/cancel", {}),
        ("POST", "/tasks/task_nope/retry", {}),
        ("GET", "/tasks/task_nope/attempts", None),
        ("POST", "/workers/tasks/task_nope/complete", {}),
        ("POST", "/workers/tasks/task_nope/fail", {"error": "x"}),
        ("POST", "/workers/tasks/task_nope/heartbeat", {}),
        ("POST", "/workers/tasks/task_nope/release", {}),
    ]:
        assert_problem(api.request(method, path, json=body), 404, "not_found")


def test_operator_resolves_pending_and_running_tasks_by_hand(api: httpx.Client, name: str) -> None:
    """P-MANUAL-1."""
    pending = enqueue(api, name)
    r = api.post(
        f"/tasks/{pending['id']}/complete",
        json={"output": {"by": "hand"}, "reason": "no worker yet"},
    )
    assert (
        r.status_code == 200
        and r.json()["status"] == "completed"
        and r.json()["output"] == {"by": "hand"}
    )
    assert_problem(
        api.post(f"/tasks/{pending['id']}/fail", json={"error": "x"}), 409, "invalid_state"
    )

    enqueue(api, name)
    running = claim(api, name, worker_id=name)
    r = api.post(f"/tasks/{running['id']}/fail", json={"error": "stuck worker"})
    assert r.json()["status"] == "failed" and r.json()["error"]["code"] == "manual"
    beat = api.post(f"/workers/{name}/heartbeat", json={"active_task_ids": [running["id"]]}).json()
    assert beat["tasks"][0]["lease_lost"] is True
    lease = {"lease_id": running["lease"]["id"]}
    # The worker hears lease_lost everywhere, never task_cancelled (P-MANUAL-1).
    for path, body in [
        ("complete", lease),
        ("complete", {}),
        ("fail", {**lease, "error": "late"}),
        ("heartbeat", lease),
    ]:
        assert_problem(
            api.post(f"/workers/tasks/{running['id']}/{path}", json=body), 409, "lease_lost"
        )
    history = api.get(f"/tasks/{running['id']}/attempts").json()["attempts"]
    assert history[-1]["outcome"] == "cancelled" and history[-1]["error"]["code"] == "manual"

    enqueue(api, name)
    running = claim(api, name, worker_id=name)
    api.post(f"/tasks/{running['id']}/complete", json={"output": 1}).raise_for_status()
    late = api.post(
        f"/workers/tasks/{running['id']}/complete", json={"lease_id": running["lease"]["id"]}
    )
    assert_problem(late, 409, "lease_lost")
    # Its last lease ended by the operator's hand, not as a worker's success (P-DONE-1)
    history = api.get(f"/tasks/{running['id']}/attempts").json()["attempts"]
    assert [(a["outcome"], a["error"]["code"]) for a in history] == [("cancelled", "manual")]


def test_fail_without_code_is_stored_as_worker_error(api: httpx.Client, name: str) -> None:
    enqueue(api, name)
    task = claim(api, name)
    r = api.post(f"/workers/tasks/{task['id']}/fail", json={"error": "boom"})
    assert r.json()["error_code"] == "worker_error"
    assert api.get(f"/tasks/{task['id']}").json()["error"]["code"] == "worker_error"


def test_p_task_3_engine_keys_are_refused(api: httpx.Client, name: str) -> None:
    """A caller's key may not begin with `wf:`: the workflow engine would adopt such a task
    as a step's (P-WF-4). The single and the batch enqueue point at the key."""
    r = api.post("/tasks", json={"handler_name": name, "idempotency_key": "wf:inst_x:1:step:a"})
    body = assert_problem(r, 422, "validation_error")
    assert body["errors"][0]["pointer"] == "/idempotency_key", body
    ok = {"handler_name": name, "idempotency_key": "w:f"}
    bad = {"handler_name": name, "idempotency_key": "wf:"}
    r = api.post("/tasks/batch", json={"tasks": [ok, bad]})
    body = assert_problem(r, 422, "validation_error")
    assert body["errors"][0]["pointer"] == "/tasks/1/idempotency_key", body
    assert api.get("/tasks", params={"handler_name": name}).json()["tasks"] == []
