"""Workflows on two replicas sharing one PostgreSQL database (P-WF-5): instances started on
either, step tasks claimed on one and completed on the other, results awaited on the
other; every instance completes with each step dispatched once."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from conftest import launch, stop_server

INSTANCES = 200
HANDLERS = ["wfr_a", "wfr_b", "wfr_c"]


def _worker(claim_url: str, report_url: str, stop: threading.Event) -> None:
    with (
        httpx.Client(base_url=claim_url, timeout=10) as poll,
        httpx.Client(base_url=report_url, timeout=10) as report,
    ):
        while not stop.is_set():
            r = poll.post("/workers/tasks/poll/batch",
                          json={"handler_names": HANDLERS, "batch_size": 10, "wait_ms": 200})  # fmt: skip
            items = [{"task_id": t["id"], "lease_id": t["lease"]["id"],
                      "output": {"by": t["context"]["step_id"], "n": t["params"].get("n", 0) + 1}}
                     for t in r.json()["tasks"]] if r.status_code == 200 else []  # fmt: skip
            if items:
                assert report.post("/workers/tasks/complete/batch", json={"items": items}
                                   ).status_code == 200  # fmt: skip


def test_two_replicas_advance_instances_P_WF_5(
    new_database: Callable[[], str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    url = new_database()
    logs = tmp_path_factory.mktemp("wf-replicas")
    servers = [launch(url, Path(logs) / f"replica{i}.log") for i in range(2)]
    stop = threading.Event()
    threads = [
        threading.Thread(target=_worker, args=(servers[i % 2].url, servers[(i + 1) % 2].url, stop))
        for i in range(4)
    ]
    try:
        steps = [
            {"id": "one", "handler": HANDLERS[0], "params": {"n": {"$from": "input.n"}}},
            {"id": "fan", "parallel": [
                {"id": "left", "handler": HANDLERS[1], "params": {"n": {"$from": "steps.one.output.n"}}},
                {"id": "right", "handler": HANDLERS[1], "params": {"n": 10}}]},
            {"id": "last", "handler": HANDLERS[2], "params": {"n": {"$from": "steps.fan.output.left.n"}}},
        ]  # fmt: skip
        clients = [httpx.Client(base_url=s.url, timeout=60) for s in servers]
        assert (
            clients[0].post("/sequences", json={"name": "rep", "steps": steps}).status_code == 201
        )
        for t in threads:
            t.start()
        ids = []
        for i in range(INSTANCES):
            r = clients[i % 2].post("/instances", json={"sequence": "rep", "input": {"n": 0}})
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
        for i, inst_id in enumerate(ids):  # waited for on the other replica than the start
            inst = (
                clients[(i + 1) % 2].get(f"/instances/{inst_id}", params={"wait_ms": 30000}).json()
            )
            assert inst["status"] == "completed" and inst["output"] == {"by": "last", "n": 3}, inst
            tasks = clients[i % 2].get("/tasks", params={"instance_id": inst_id}).json()["tasks"]
            per_step = Counter(t["context"]["step_id"] for t in tasks)
            assert per_step == {"one": 1, "left": 1, "right": 1, "last": 1}, per_step
    finally:
        stop.set()
        for t in threads:
            t.join(15)
        for s in servers:
            stop_server(s)
