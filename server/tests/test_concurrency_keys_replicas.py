"""Three replicas on one PostgreSQL database never put more tasks of a concurrency key in
slots than its limit (P-KEY-1), counted from the attempt history: enqueues, claims and
completions race on every replica, with retries and releases mixed in."""

from __future__ import annotations

import random
import threading
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import launch, stop_server
from pg_cluster import PgCluster

from orch8_server.testing import RunningServer

KEYS = 6
LIMIT = 2
TASKS = 240
WORKERS = 6  # two per replica


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[RunningServer]]:
    pg = PgCluster().init()
    url = pg.create_database("orch8_keys")
    logs = tmp_path_factory.mktemp("keys")
    servers = [
        launch(url, Path(logs) / f"r{i}.log", **{"reaper-interval-ms": 200}) for i in range(3)
    ]
    yield servers
    for s in servers:
        stop_server(s)
    pg.destroy()


def _work(url: str, handler: str, seed: int, left: list[int], lock: threading.Lock) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=url, timeout=30) as api:
        while True:
            with lock:
                if left[0] <= 0:
                    return
            r = api.post("/workers/tasks/poll/batch", json={
                "handler_names": [handler], "wait_ms": 200, "batch_size": 4,
                "worker_id": f"w{seed}"})  # fmt: skip
            assert r.status_code == 200, r.text
            for task in r.json()["tasks"]:
                lease = task["lease"]["id"]
                roll = rng.random()
                if roll < 0.1 and task["attempt"] == 1:  # a retry without backoff
                    body = {"lease_id": lease, "error": "again", "retryable": True,
                            "retry_after_ms": 0}  # fmt: skip
                    r = api.post(f"/workers/tasks/{task['id']}/fail", json=body)
                elif roll < 0.15:  # given back: it queues for a slot again
                    r = api.post(f"/workers/tasks/{task['id']}/release", json={"lease_id": lease})
                else:
                    r = api.post(f"/workers/tasks/{task['id']}/complete",
                                 json={"lease_id": lease, "output": None})  # fmt: skip
                    with lock:
                        left[0] -= 1
                assert r.status_code == 200, r.text


def _most_at_once(spans: list[tuple[str, str]]) -> int:
    """The largest number of [start, end] spans open at one instant; an end at the same
    millisecond as a start comes first (the slot was freed, then taken)."""
    events = sorted(
        [(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda x: (x[0], x[1])
    )
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


@pytest.mark.backends("postgresql")
def test_three_replicas_never_exceed_a_keys_limit_P_KEY_1(
    replicas: list[RunningServer], backend: str
) -> None:
    handler = "keyed_" + backend
    ids: dict[str, str] = {}
    for i in range(0, TASKS, 40):  # through every replica
        api = httpx.Client(base_url=replicas[(i // 40) % 3].url, timeout=30)
        with api:
            batch = [{"handler_name": handler, "concurrency_key": f"k{j % KEYS}",
                      "max_concurrency": LIMIT} for j in range(i, i + 40)]  # fmt: skip
            r = api.post("/tasks/batch", json={"tasks": batch})
            assert r.status_code == 201, r.text
            ids.update({t["id"]: t["concurrency_key"] for t in r.json()["tasks"]})
    left, lock = [TASKS], threading.Lock()
    threads = [
        threading.Thread(target=_work, args=(replicas[i % 3].url, handler, i, left, lock))
        for i in range(WORKERS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert left[0] == 0, f"{left[0]} tasks never completed"
    spans: dict[str, list[tuple[str, str]]] = defaultdict(list)
    with httpx.Client(base_url=replicas[0].url, timeout=30) as api:
        for task_id, key in ids.items():
            attempts = api.get(f"/tasks/{task_id}/attempts").json()["attempts"]
            spans[key] += [(a["started_at"], a["ended_at"]) for a in attempts]
    assert sum(len(s) for s in spans.values()) > TASKS  # retries and releases happened
    most = {key: _most_at_once(s) for key, s in spans.items()}
    assert max(most.values()) <= LIMIT, most
    assert min(most.values()) == LIMIT, most  # the limit was reached, not merely respected
