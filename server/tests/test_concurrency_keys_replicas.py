"""Three replicas on one PostgreSQL database never put more tasks of a concurrency key in
slots than its limit (P-KEY-1), never run more instances of an instance key than its limit
(P-KEY-7) and never start a rate limit's tasks faster than its pace (P-RATE-1), counted from
the attempt history: enqueues, claims and completions race on every replica, with retries
and releases mixed in."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import launch, stop_server
from pg_cluster import PgCluster

from orch8_server.testing import RunningServer
from orch8_server.timefmt import parse

KEYS = 6
LIMIT = 2
TASKS = 240
WORKERS = 6  # two per replica


@pytest.fixture(scope="module")
def replicas(
    pg: PgCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[RunningServer]]:
    """Three replicas on a new database of the session's cluster (no restart here, unlike
    test_replicas.py, so the cluster is shared)."""
    url = pg.create_database("orch8_keys")
    logs = tmp_path_factory.mktemp("keys")
    servers = [
        launch(url, Path(logs) / f"r{i}.log", **{"reaper-interval-ms": 200}) for i in range(3)
    ]
    yield servers
    for s in servers:
        stop_server(s)


Held = list[tuple[str, float, float]]  # task id, received, result sent (monotonic seconds)


def _work(
    url: str, handler: str, seed: int, left: list[int], lock: threading.Lock, held: Held
) -> None:
    """A worker: claims batches of 4 and completes, fails once (a retry) or releases each.
    `held` gets each task's span as this process saw it, from the poll's answer to the
    result's request: inside the span the server counts it in a slot (claim commit to
    result commit), on one clock, so overlaps of these spans never exceed the server's."""
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
            got = time.monotonic()
            for task in r.json()["tasks"]:
                lease = task["lease"]["id"]
                roll = rng.random()
                sent = time.monotonic()
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
                with lock:
                    held.append((task["id"], got, sent))


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    """The largest number of [start, end] spans open at one instant."""
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
    left, lock, held = [TASKS], threading.Lock(), []
    threads = [
        threading.Thread(target=_work, args=(replicas[i % 3].url, handler, i, left, lock, held))
        for i in range(WORKERS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert left[0] == 0, f"{left[0]} tasks never completed"
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for task_id, got, sent in held:
        spans[ids[task_id]].append((got, sent))
    assert len(held) > TASKS  # retries and releases happened
    most = {key: _most_at_once(s) for key, s in spans.items()}
    assert max(most.values()) <= LIMIT, most
    assert min(most.values()) == LIMIT, most  # the limit was reached, not merely respected


PACED = 60
RATE = (20, 1000, 5)  # limit, period_ms, burst


SKEW_MS = 100  # a claim's started_at is read before its statement runs: up to this early


def _starts_within_pace(starts: list[int]) -> list[tuple[int, int, int]]:
    """Windows [starts[i], starts[j]] holding more starts than the bucket allows, with
    SKEW_MS of slack for the instants the server stamps before its claim commits."""
    limit, period, burst = RATE
    over = []
    for i in range(len(starts)):
        for j in range(i, len(starts)):
            span = starts[j] - starts[i] + SKEW_MS
            allowed = burst + limit * span / period + 1  # +1: millisecond rounding
            if j - i + 1 > allowed:
                over.append((starts[i], starts[j], j - i + 1))
    return over


@pytest.mark.backends("postgresql")
def test_three_replicas_keep_a_rate_limits_pace_P_RATE_1(
    replicas: list[RunningServer], backend: str
) -> None:
    handler, key = "paced_" + backend, "vendor-api"
    limit, period, burst = RATE
    with httpx.Client(base_url=replicas[1].url, timeout=30) as api:
        r = api.put(
            f"/rate-limits/{key}", json={"limit": limit, "period_ms": period, "burst": burst}
        )
        assert r.status_code == 200, r.text
    ids: list[str] = []
    for i in range(3):  # through every replica
        with httpx.Client(base_url=replicas[i].url, timeout=30) as api:
            batch = [{"handler_name": handler, "rate_limit_key": key}] * (PACED // 3)
            r = api.post("/tasks/batch", json={"tasks": batch})
            assert r.status_code == 201, r.text
            ids += [t["id"] for t in r.json()["tasks"]]
    left, lock = [PACED], threading.Lock()
    threads = [
        threading.Thread(target=_work, args=(replicas[i % 3].url, handler, 100 + i, left, lock, []))
        for i in range(WORKERS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert left[0] == 0, f"{left[0]} tasks never completed"
    starts: list[int] = []
    with httpx.Client(base_url=replicas[0].url, timeout=30) as api:
        for task_id in ids:
            for a in api.get(f"/tasks/{task_id}/attempts").json()["attempts"]:
                starts.append(parse(a["started_at"]))
    starts.sort()
    assert len(starts) > PACED  # retries and releases took tokens too
    assert _starts_within_pace(starts) == []
    # The pace was applied, not merely allowed: the starts past the burst took their time.
    assert starts[-1] - starts[0] >= (len(starts) - burst - 1) * period / limit * 0.9


INSTANCES = 60


@pytest.mark.backends("postgresql")
def test_three_replicas_never_run_more_instances_of_a_key_than_its_limit_P_KEY_7(
    replicas: list[RunningServer], backend: str
) -> None:
    """Starts race with the ends of other instances of their key on every replica; an
    instance's step task is claimable only while the instance holds a slot, so the steps'
    spans never overlap more than the key's limit (P-KEY-7)."""
    handler = "inst_keyed_" + backend
    with httpx.Client(base_url=replicas[0].url, timeout=30) as api:
        r = api.post("/sequences", json={"name": handler, "steps": [
            {"id": "only", "handler": handler}]})  # fmt: skip
        assert r.status_code == 201, r.text
    key_of: dict[str, str] = {}  # instance id -> key

    def starter(i: int) -> None:
        with httpx.Client(base_url=replicas[i].url, timeout=30) as api:
            for j in range(i, INSTANCES, 3):
                key = f"c{(j // 3) % KEYS}"  # the three starters race on one key
                r = api.post("/instances", json={"sequence": handler, "concurrency_key": key,
                                                 "max_concurrency": LIMIT})  # fmt: skip
                assert r.status_code == 201, r.text
                key_of[r.json()["id"]] = key

    left, lock, held = [INSTANCES], threading.Lock(), []
    threads = [threading.Thread(target=starter, args=(i,)) for i in range(3)] + [
        threading.Thread(target=_work, args=(replicas[i % 3].url, handler, 200 + i, left, lock, held))
        for i in range(WORKERS)
    ]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert left[0] == 0, f"{left[0]} instances never completed"
    instance_of: dict[str, str] = {}
    with httpx.Client(base_url=replicas[2].url, timeout=30) as api:
        for inst_id in key_of:
            body = api.get(f"/instances/{inst_id}", params={"wait_ms": 5000}).json()
            assert body["status"] == "completed", body
            instance_of[body["steps"][0]["task_id"]] = inst_id
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for task_id, got, sent in held:
        spans[key_of[instance_of[task_id]]].append((got, sent))
    most = {key: _most_at_once(s) for key, s in spans.items()}
    assert max(most.values()) == LIMIT, most  # reached (by some key), never exceeded
