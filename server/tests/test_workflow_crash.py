"""kill -9 of the server while instances run: after a restart every instance completes and
every step was dispatched once (P-WF-5)."""

from __future__ import annotations

import os
import threading
from collections import Counter

import httpx
from conftest import eventually

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
