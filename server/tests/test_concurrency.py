"""No task is ever held by two leases, however many pollers race (P-POLL-6)."""

from __future__ import annotations

import collections
import threading

import httpx
from conftest import eventually

TASKS = 3000
POLLERS = 16


def test_no_double_claim_under_many_concurrent_pollers(
    api: httpx.Client, server, name: str
) -> None:
    for start in range(0, TASKS, 100):
        r = api.post(
            "/tasks/batch",
            json={
                "tasks": [
                    {"handler_name": name, "params": {"i": i}} for i in range(start, start + 100)
                ]
            },
        )
        assert r.status_code == 201
    claims: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()
    errors: list[str] = []

    def worker(n: int) -> None:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            while True:
                r = c.post(
                    "/workers/tasks/poll/batch",
                    json={
                        "handler_names": [name],
                        "worker_id": f"w{n}",
                        "batch_size": 1 + n % 7,
                        "wait_ms": 200,
                    },
                )
                tasks = r.json()["tasks"]
                if not tasks:
                    return
                with lock:
                    claims.update(t["id"] for t in tasks)
                if n % 2:
                    items = [
                        {"task_id": t["id"], "lease_id": t["lease"]["id"], "output": n}
                        for t in tasks
                    ]
                    statuses = {
                        i["status"]
                        for i in c.post(
                            "/workers/tasks/complete/batch", json={"items": items}
                        ).json()["items"]
                    }
                    if statuses != {"completed"}:
                        errors.append(str(statuses))
                else:
                    for t in tasks:
                        r = c.post(
                            f"/workers/tasks/{t['id']}/complete",
                            json={"lease_id": t["lease"]["id"], "output": n},
                        )
                        if r.status_code != 200:
                            errors.append(r.text)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(POLLERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    assert len(claims) == TASKS and max(claims.values()) == 1  # every task claimed exactly once
    done = eventually(lambda: api.get("/queues").json() and _completed(api, name), timeout=10)
    assert done == TASKS


def _completed(api: httpx.Client, name: str) -> int:
    total, cursor = 0, None
    while True:
        params = {
            "handler_name": name,
            "status": "completed",
            "limit": 500,
            **({"cursor": cursor} if cursor else {}),
        }
        page = api.get("/tasks", params=params).json()
        total += len(page["tasks"])
        cursor = page["next_cursor"]
        if cursor is None:
            return total
