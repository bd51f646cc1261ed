"""Worker keys are confined to what they hold (P-AUTH-6, P-AUTH-7), on both backends.

The auth matrix checks each role against its own and another tenant's objects; here two
worker keys of the SAME tenant probe each other: a key scoped to queue `images` / handler
`resize`, and an unscoped key that registered no worker. Each probe must change nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import assert_problem, key_entry

TENANT = "t1"
KEYS: dict[str, tuple[str, str, dict[str, Any]]] = {  # id -> (secret, role, scope)
    "admin": ("o8k_conf_admin", "admin", {}),
    "holder": ("o8k_conf_holder", "worker", {}),
    "other": ("o8k_conf_other", "worker", {}),
    "scoped": ("o8k_conf_scoped", "worker", {"queues": ["images"], "handlers": ["resize"]}),
}


def _keys_toml() -> str:
    return "".join(
        key_entry(key_id, secret, role, tenant=TENANT, **scope)
        for key_id, (secret, role, scope) in KEYS.items()
    )


class As:
    """Calls made with one key."""

    def __init__(self, api: httpx.Client, key_id: str) -> None:
        self.api = api
        self.headers = {"Authorization": f"Bearer {KEYS[key_id][0]}"}

    def post(self, path: str, body: Any = None) -> httpx.Response:
        return self.api.post(path, json=body, headers=self.headers)

    def get(self, path: str) -> httpx.Response:
        return self.api.get(path, headers=self.headers)

    def delete(self, path: str) -> httpx.Response:
        return self.api.delete(path, headers=self.headers)


@pytest.fixture(scope="module")
def api(start_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    keys = tmp_path_factory.mktemp("keys") / "keys.toml"
    keys.write_text(_keys_toml())
    server = start_server(**{"keys-file": keys})
    with httpx.Client(base_url=server.url, timeout=20) as client:
        yield client


def _held(api: httpx.Client, queue: str = "default", handler: str | None = None) -> dict:
    """A task enqueued by the admin and claimed by `holder` under its registered worker."""
    admin, holder = As(api, "admin"), As(api, "holder")
    handler = handler or "h_" + uuid.uuid4().hex[:10]
    worker_id = "w_" + uuid.uuid4().hex[:10]
    assert holder.post("/workers", {"worker_id": worker_id}).status_code in (200, 201)
    r = admin.post("/tasks", {"handler_name": handler, "queue_name": queue})
    assert r.status_code == 201, r.text
    poll = {"handler_names": [handler], "queue_name": queue, "worker_id": worker_id, "wait_ms": 0}
    claimed = holder.post("/workers/tasks/poll", poll)
    assert claimed.status_code == 200, claimed.text
    task = claimed.json()
    return {"id": task["id"], "lease_id": task["lease"]["id"], "worker_id": worker_id}


def _unchanged(api: httpx.Client, task: dict) -> None:
    row = As(api, "admin").get(f"/tasks/{task['id']}").json()
    assert row["status"] == "running" and row["attempt"] == 1, row
    assert row["lease"]["id"] == task["lease_id"], row


ACTS = ("complete", "fail", "release", "heartbeat")


def _body(act: str, lease_id: str | None = None) -> dict:
    body: dict[str, Any] = {"error": "x", "retryable": True} if act == "fail" else {}
    if lease_id is not None:
        body["lease_id"] = lease_id
    return body


@pytest.mark.parametrize("act", ACTS)
def test_p_auth_6_a_scoped_key_cannot_touch_another_queues_task(act: str, api) -> None:
    """Out of the key's queues/handlers: 404 as a foreign id, without a lease id or with
    the right one; the task stays running under its lease."""
    task = _held(api, queue="emails")
    scoped = As(api, "scoped")
    for lease in (None, task["lease_id"]):
        r = scoped.post(f"/workers/tasks/{task['id']}/{act}", _body(act, lease))
        body = assert_problem(r, 404, "not_found")
        assert task["lease_id"] not in r.text, body
    _unchanged(api, task)


@pytest.mark.parametrize("act", ACTS)
def test_p_auth_6_a_key_that_holds_no_lease_is_refused(act: str, api) -> None:
    """In scope but not held: 403 without the lease id (the detail says what to send),
    lease_lost with a wrong one; nothing changes and no lease id leaks."""
    task = _held(api, queue="images", handler="resize")
    for who in ("other", "scoped"):
        caller = As(api, who)
        r = caller.post(f"/workers/tasks/{task['id']}/{act}", _body(act))
        body = assert_problem(r, 403, "forbidden")
        assert "lease_id" in body["detail"] and task["lease_id"] not in r.text
        r = caller.post(f"/workers/tasks/{task['id']}/{act}", _body(act, "l_not_the_lease"))
        assert_problem(r, 409, "lease_lost")
        assert task["lease_id"] not in r.text
    _unchanged(api, task)


@pytest.mark.parametrize("act", ACTS)
def test_p_auth_6_the_holder_acts_without_a_lease_id(act: str, api) -> None:
    """The key whose registered worker holds the lease may use the seed's curl form."""
    task = _held(api)
    r = As(api, "holder").post(f"/workers/tasks/{task['id']}/{act}", _body(act))
    assert r.status_code == 200, r.text
    if act == "heartbeat":
        assert r.json()["lease_id"] == task["lease_id"]


def test_p_auth_6_batches_refuse_item_by_item(api) -> None:
    """complete/batch and fail/batch: each foreign item is an error item, the holder's
    own item in the same batch completes."""
    mine = _held(api, queue="images", handler="resize")
    foreign = _held(api, queue="emails")
    scoped = As(api, "scoped")
    # `scoped` is handed the lease of a task in its scope (as its own poll would) ...
    items = [
        {"task_id": mine["id"], "lease_id": mine["lease_id"], "output": {"ok": 1}},
        {"task_id": foreign["id"], "lease_id": foreign["lease_id"], "output": {"ok": 2}},
    ]
    r = scoped.post("/workers/tasks/complete/batch", {"items": items})
    assert r.status_code == 200, r.text
    got = {i["task_id"]: i for i in r.json()["items"]}
    assert got[mine["id"]]["status"] == "completed"
    assert got[foreign["id"]]["status"] == "error"
    assert got[foreign["id"]]["problem"]["code"] == "not_found"
    _unchanged(api, foreign)
    fails = [{"task_id": foreign["id"], "error": "x", "retryable": False}]
    r = As(api, "other").post("/workers/tasks/fail/batch", {"items": fails})
    assert r.json()["items"][0]["problem"]["code"] == "forbidden", r.text
    _unchanged(api, foreign)


def test_p_auth_7_another_keys_worker_is_not_found(api) -> None:
    """get, heartbeat and deregister of a worker another key registered: 404, and its
    task is not reclaimed (no attempt spent as worker_lost)."""
    task = _held(api)
    path = f"/workers/{task['worker_id']}"
    for who in ("other", "scoped"):
        caller = As(api, who)
        assert_problem(caller.get(path), 404, "not_found")
        assert_problem(caller.delete(path), 404, "not_found")
        beat = {"active_task_ids": [task["id"]]}
        assert_problem(caller.post(f"{path}/heartbeat", beat), 404, "not_found")
    _unchanged(api, task)
    assert As(api, "holder").get(path).status_code == 200


def test_p_auth_7_another_keys_worker_id_cannot_be_taken(api) -> None:
    """Registering or polling under a worker id another key registered is 403."""
    task = _held(api)
    other = As(api, "other")
    r = other.post("/workers", {"worker_id": task["worker_id"]})
    assert_problem(r, 403, "forbidden")
    poll = {"worker_id": task["worker_id"], "handler_names": ["h"], "wait_ms": 0}
    assert_problem(other.post("/workers/tasks/poll", poll), 403, "forbidden")
    # the operator's view of the worker is unchanged: still the holder's
    assert As(api, "holder").get(f"/workers/{task['worker_id']}").status_code == 200


def test_p_auth_7_a_heartbeat_registers_an_unknown_worker_to_its_key(api) -> None:
    """A worker first seen in a heartbeat belongs to the key that sent it."""
    worker_id = "w_" + uuid.uuid4().hex[:10]
    other = As(api, "other")
    r = other.post(f"/workers/{worker_id}/heartbeat", {"active_task_ids": []})
    assert r.status_code == 200, r.text
    assert other.get(f"/workers/{worker_id}").status_code == 200
    assert_problem(As(api, "holder").get(f"/workers/{worker_id}"), 404, "not_found")
