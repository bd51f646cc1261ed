"""kill -9 of the server while instances run: after a restart every instance completes and
every step was dispatched once (P-WF-5)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections import Counter

import httpx
from conftest import RunningServer, eventually

from orch8_server.lifecycle.tasks import new_task_row
from orch8_server.lifecycle.workflow_steps import STEP, task_key
from orch8_server.storage import open_storage

INSTANCES = int(os.environ.get("ORCH8_WF_CRASH_INSTANCES", "300"))
HANDLERS = ["wfc_a", "wfc_b", "wfc_c"]


def _worker(url: str, stop: threading.Event, runs: Counter[str]) -> None:
    with httpx.Client(base_url=url, timeout=5) as c:
        while not stop.is_set():
            try:
                r = c.post(
                    "/workers/tasks/poll/batch",
                    json={"handler_names": HANDLERS, "batch_size": 10, "wait_ms": 200,
                          "lease_ms": 1000},
                )  # fmt: skip
                if r.status_code != 200:
                    continue
                items = []
                for t in r.json()["tasks"]:
                    runs[t["context"]["instance_id"] + "/" + t["context"]["step_id"]] += 1
                    items.append({"task_id": t["id"], "lease_id": t["lease"]["id"],
                                  "output": {"n": t["params"].get("n", 0) + 1}})  # fmt: skip
                if items:
                    c.post("/workers/tasks/complete/batch", json={"items": items})
            except (httpx.TransportError, ValueError):
                stop.wait(0.05)  # the server is down: try again until it is back


def test_kill_9_while_instances_run_P_WF_5(start_server) -> None:
    server = start_server()
    steps = [
        {"id": "one", "handler": HANDLERS[0], "params": {"n": {"$from": "input.n"}}},
        {"id": "two", "handler": HANDLERS[1], "params": {"n": {"$from": "steps.one.output.n"}}},
        {"id": "three", "handler": HANDLERS[2], "params": {"n": {"$from": "steps.two.output.n"}}},
    ]
    with httpx.Client(base_url=server.url, timeout=10) as c:
        assert c.post("/sequences", json={"name": "crash", "steps": steps}).status_code == 201
        ids = []
        for i in range(INSTANCES):
            r = c.post("/instances", json={"sequence": "crash", "input": {"n": 0},
                                           "idempotency_key": f"crash-{i}"})  # fmt: skip
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
    stop = threading.Event()
    runs: Counter[str] = Counter()
    threads = [threading.Thread(target=_worker, args=(server.url, stop, runs)) for _ in range(3)]
    for t in threads:
        t.start()
    eventually(lambda: sum(runs.values()) > INSTANCES, timeout=60)  # mid-flight
    server.kill()  # SIGKILL: no shutdown hook runs
    server.restart()  # same database, same port
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:

            def all_done() -> bool:
                page = c.get("/instances", params={"sequence": "crash", "status": "completed",
                                                   "limit": 500})  # fmt: skip
                done = len(page.json()["instances"])
                cursor = page.json()["next_cursor"]
                while cursor:
                    page = c.get("/instances", params={"sequence": "crash", "status": "completed",
                                                       "limit": 500, "cursor": cursor})  # fmt: skip
                    done += len(page.json()["instances"])
                    cursor = page.json()["next_cursor"]
                return done == INSTANCES

            eventually(all_done, timeout=120, interval=0.5)
            stop.set()
            for inst_id in ids:
                inst = c.get(f"/instances/{inst_id}").json()
                assert inst["status"] == "completed" and inst["output"] == {"n": 3}, inst
                tasks = c.get("/tasks", params={"instance_id": inst_id}).json()["tasks"]
                per_step = Counter(t["context"]["step_id"] for t in tasks)
                assert per_step == {"one": 1, "two": 1, "three": 1}, (inst_id, per_step)
                assert {t["status"] for t in tasks} == {"completed"}
    finally:
        stop.set()
        for t in threads:
            t.join(10)


def _store_task(db: str, row: dict) -> None:
    """Insert `row` straight into the server's database (as an earlier version left it)."""

    async def insert() -> None:
        storage = open_storage(db, pool_size=1)
        await storage.open()
        try:
            async with storage.transaction() as tx:
                assert (await tx.insert_task(row))[1]  # type: ignore[arg-type]
        finally:
            await storage.close()

    asyncio.run(insert())


def test_a_step_task_stored_before_its_instance_knew_is_adopted_not_dispatched_again_P_WF_4(
    server: RunningServer, api: httpx.Client, name: str
) -> None:
    """An instance's state names its steps' tasks, and the advance that dispatches a step
    stores both in one transaction. A task holding the step's key while the state does not
    name it (an earlier version's crash between the two) is the step's task: the advance
    adopts it, creates no second task, and the instance goes on when it ends."""
    steps = [{"id": "a", "handler": name + "_a"}, {"id": "b", "handler": name + "_b"}]
    assert api.post("/sequences", json={"name": name, "steps": steps}).status_code == 201
    r = api.post("/instances", json={"sequence": name})
    assert r.status_code == 201, r.text
    inst = r.json()
    before = new_task_row({"handler_name": name + "_b", "params": {"from": "before"},
                           "context": {"instance_id": inst["id"], "step_id": "b"}},
                          0, "", "default")  # fmt: skip
    before["idempotency_key"] = task_key(inst["id"], 1, STEP, "b")
    _store_task(server.db, before)
    a = api.post("/workers/tasks/poll", json={"handler_names": [name + "_a"], "wait_ms": 5000})
    assert a.status_code == 200, a.text
    done = api.post(f"/workers/tasks/{a.json()['id']}/complete",
                    json={"lease_id": a.json()["lease"]["id"], "output": 1})  # fmt: skip
    assert done.status_code == 200, done.text
    now = api.get(f"/instances/{inst['id']}").json()
    assert now["steps"][1]["task_id"] == before["id"], now
    b = api.post("/workers/tasks/poll", json={"handler_names": [name + "_b"], "wait_ms": 5000})
    assert b.status_code == 200 and b.json()["id"] == before["id"], b.text
    assert b.json()["params"] == {"from": "before"}
    done = api.post(f"/workers/tasks/{before['id']}/complete",
                    json={"lease_id": b.json()["lease"]["id"], "output": {"b": 2}})  # fmt: skip
    assert done.status_code == 200, done.text
    end = api.get(f"/instances/{inst['id']}", params={"wait_ms": 10000}).json()
    assert end["status"] == "completed" and end["output"] == {"b": 2}, end
    tasks = api.get("/tasks", params={"instance_id": inst["id"]}).json()["tasks"]
    assert sorted(t["context"]["step_id"] for t in tasks) == ["a", "b"], tasks
