"""kill -9 under load loses nothing that was acknowledged (SQLite WAL durability)."""

from __future__ import annotations

import threading

import httpx
from conftest import eventually


def test_kill_9_under_load_keeps_every_acknowledged_write(start_server) -> None:
    server = start_server()
    acked_enqueues: list[str] = []
    acked_completes: dict[str, object] = {}
    stop = threading.Event()

    def producer() -> None:
        with httpx.Client(base_url=server.url, timeout=5) as c:
            i = 0
            while not stop.is_set():
                try:
                    r = c.post("/tasks", json={"handler_name": "crash", "params": {"i": i}})
                except httpx.TransportError:
                    return
                if r.status_code == 201:
                    acked_enqueues.append(r.json()["id"])
                i += 1

    def consumer() -> None:
        with httpx.Client(base_url=server.url, timeout=5) as c:
            while not stop.is_set():
                try:
                    r = c.post(
                        "/workers/tasks/poll/batch",
                        json={"handler_names": ["crash"], "batch_size": 5, "wait_ms": 100},
                    )
                    for t in r.json()["tasks"]:
                        out = {"by": "consumer", "i": t["params"]["i"]}
                        done = c.post(
                            f"/workers/tasks/{t['id']}/complete",
                            json={"lease_id": t["lease"]["id"], "output": out},
                        )
                        if done.status_code == 200:
                            acked_completes[t["id"]] = out
                except (httpx.TransportError, ValueError):
                    return

    threads = [threading.Thread(target=producer) for _ in range(3)] + [
        threading.Thread(target=consumer) for _ in range(3)
    ]
    for t in threads:
        t.start()
    eventually(lambda: len(acked_completes) > 200, timeout=20)
    server.kill()  # SIGKILL mid-load: no shutdown hook runs
    stop.set()
    for t in threads:
        t.join(10)
    assert len(acked_enqueues) > 200

    server.restart()  # same database, same port
    with httpx.Client(base_url=server.url, timeout=10) as c:
        for task_id in acked_enqueues:
            assert c.get(f"/tasks/{task_id}").status_code == 200, task_id
        for task_id, output in acked_completes.items():
            task = c.get(f"/tasks/{task_id}").json()
            assert task["status"] == "completed" and task["output"] == output
        # Claims in flight at the crash are not lost either: their leases expire and
        # the tasks come back (lease 60 s by default, so only check they are running or done).
        statuses = {c.get(f"/tasks/{t}").json()["status"] for t in acked_enqueues}
        assert statuses <= {"pending", "running", "completed"}
