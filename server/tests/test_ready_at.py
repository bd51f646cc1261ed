"""ClaimedTask.ready_at: when the claimed attempt became claimable, max(created_at, run_at)
(contract 1.3.0; the worker's schedule-to-start of P-TEL-4 is claim time minus it)."""

from __future__ import annotations

import httpx
from conftest import claim, enqueue

from orch8_server.timefmt import parse


def _long_claim(api: httpx.Client, handler: str) -> dict:
    """One claim that waits (long poll, bounded) for a task not claimable yet."""
    response = api.post("/workers/tasks/poll", json={"handler_names": [handler], "wait_ms": 5000})
    assert response.status_code == 200, response.text
    return response.json()


def test_ready_at_of_a_plain_task_is_its_creation(api: httpx.Client, name: str) -> None:
    """ready_at: a task enqueued for now became claimable when it was created."""
    task = enqueue(api, name)
    claimed = claim(api, name)
    assert claimed["ready_at"] == task["created_at"] == claimed["created_at"]


def test_ready_at_of_a_scheduled_task_is_its_run_at(api: httpx.Client, name: str) -> None:
    """ready_at: a delayed task became claimable at its run_at, after its creation."""
    task = enqueue(api, name, delay_ms=300)
    claimed = _long_claim(api, name)
    assert claimed["ready_at"] == task["run_at"]
    assert parse(claimed["ready_at"]) > parse(claimed["created_at"])


def test_ready_at_of_a_retried_task_is_its_backoff_end(api: httpx.Client, name: str) -> None:
    """ready_at: a retry's attempt became claimable when its backoff ended (next_attempt_at),
    not when the task was created."""
    enqueue(api, name, retry={"max_attempts": 2})
    first = claim(api, name)
    failed = api.post(
        f"/workers/tasks/{first['id']}/fail",
        json={"lease_id": first["lease"]["id"], "error": "boom", "retryable": True,
              "retry_after_ms": 250},
    )  # fmt: skip
    assert failed.status_code == 200, failed.text
    next_at = failed.json()["next_attempt_at"]
    second = _long_claim(api, name)
    assert second["attempt"] == 2
    assert second["ready_at"] == next_at
    assert parse(second["ready_at"]) > parse(first["ready_at"])


def test_ready_at_in_a_batch_poll(api: httpx.Client, name: str) -> None:
    """ready_at: every task of a batch poll carries its own."""
    tasks = [enqueue(api, name), enqueue(api, name)]
    response = api.post(
        "/workers/tasks/poll/batch", json={"handler_names": [name], "batch_size": 5, "wait_ms": 0}
    )
    assert response.status_code == 200, response.text
    got = {t["id"]: t["ready_at"] for t in response.json()["tasks"]}
    assert got == {t["id"]: t["created_at"] for t in tasks}
