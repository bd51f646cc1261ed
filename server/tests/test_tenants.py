"""Tenants on both backends (P-TEN-1..4): isolation, wake-ups, controls, depth limits,
GET /tenants, metrics labels, and the migration of databases written before tenants.

The server runs without keys, so any `X-Tenant-Id` may be selected (P-TEN-2); each test
uses fresh tenant ids, so tests sharing a server never see each other's objects.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from conftest import assert_problem, eventually
from pg_cluster import PgCluster

from orch8_server.metrics import Metrics
from orch8_server.storage import postgres_history as pg_history
from orch8_server.storage.base import ClaimParams, TaskFilter
from orch8_server.storage.postgres_schema import MIGRATIONS as PG_MIGRATIONS
from orch8_server.storage.postgres_schema import migrate as pg_migrate
from orch8_server.storage.sqlite import SqliteStorage
from orch8_server.storage.sqlite_schema import MIGRATIONS as SQLITE_MIGRATIONS
from orch8_server.testing import RunningServer

N = 6


def _tenants() -> tuple[dict[str, str], dict[str, str]]:
    suffix = uuid.uuid4().hex[:8]
    return {"X-Tenant-Id": f"team-a-{suffix}"}, {"X-Tenant-Id": f"team-b-{suffix}"}


def _enqueue(api: httpx.Client, tenant: dict[str, str], **body: Any) -> dict[str, Any]:
    r = api.post("/tasks", json=body, headers=tenant)
    assert r.status_code in (200, 201), r.text
    return dict(r.json())


def _drain(api: httpx.Client, tenant: dict[str, str], body: dict[str, Any]) -> list[dict]:
    """Claim until a poll finds nothing; returns every claimed task."""
    claimed: list[dict] = []
    while True:
        r = api.post("/workers/tasks/poll/batch", json={**body, "batch_size": 4, "wait_ms": 0},
                     headers=tenant)  # fmt: skip
        assert r.status_code == 200, r.text
        if not r.json()["tasks"]:
            return claimed
        claimed += r.json()["tasks"]


def test_two_tenants_with_the_same_names_drain_only_their_own_tasks(
    api: httpx.Client, name: str
) -> None:
    """P-TEN-3: same queue, handler, idempotency key and worker id in two tenants; each
    tenant's poller drains exactly its own tasks, and foreign ids are 404 like unknown ones."""
    a, b = _tenants()
    queue, worker = f"q-{name}", f"w-{name}"
    mine: dict[str, set[str]] = {}
    for tenant in (a, b):
        ids = {_enqueue(api, tenant, handler_name=name, queue_name=queue)["id"] for _ in range(N)}
        keyed = _enqueue(api, tenant, handler_name=name, queue_name=queue, idempotency_key=name)
        assert keyed["tenant"] == tenant["X-Tenant-Id"]  # P-TEN-1: Task.tenant
        ids.add(keyed["id"])
        mine[tenant["X-Tenant-Id"]] = ids
        r = api.post("/workers", json={"worker_id": worker, "handlers": [name]}, headers=tenant)
        assert r.status_code == 200, r.text
        assert r.json()["tenant"] == tenant["X-Tenant-Id"]  # P-TEN-1: Worker.tenant
    # The idempotency key is per tenant: two distinct tasks, each replayed in its tenant.
    again = _enqueue(api, a, handler_name=name, queue_name=queue, idempotency_key=name)
    assert again["id"] in mine[a["X-Tenant-Id"]] and again["id"] not in mine[b["X-Tenant-Id"]]

    poll = {"queue_name": queue, "handler_names": [name], "worker_id": worker}
    drained = {t["X-Tenant-Id"]: _drain(api, t, poll) for t in (a, b)}
    for tenant_id, tasks in drained.items():
        assert {t["id"] for t in tasks} == mine[tenant_id]

    # Foreign ids answer exactly like ids that never existed (P-TEN-3).
    foreign = drained[b["X-Tenant-Id"]][0]
    assert_problem(api.get(f"/tasks/{foreign['id']}", headers=a), 404, "not_found")
    assert_problem(api.get(f"/tasks/{foreign['id']}/attempts", headers=a), 404, "not_found")
    assert_problem(api.post(f"/tasks/{foreign['id']}/cancel", json={}, headers=a), 404,
                   "not_found")  # fmt: skip
    done = {"lease_id": foreign["lease"]["id"], "output": {}}
    assert_problem(api.post(f"/workers/tasks/{foreign['id']}/complete", json=done, headers=a),
                   404, "not_found")  # fmt: skip
    batch = api.post("/workers/tasks/complete/batch",
                     json={"items": [{"task_id": foreign["id"], **done}]}, headers=a)  # fmt: skip
    assert batch.json()["items"][0]["problem"]["code"] == "not_found", batch.text
    hb = api.post(f"/workers/tasks/{foreign['id']}/heartbeat",
                  json={"lease_id": foreign["lease"]["id"]}, headers=a)  # fmt: skip
    assert_problem(hb, 404, "not_found")
    # ... and the owner still holds its lease: nothing above touched it.
    own = api.post(f"/workers/tasks/{foreign['id']}/complete", json=done, headers=b)
    assert own.status_code == 200, own.text
    stranger = {"X-Tenant-Id": f"nobody-{name}"}
    assert_problem(api.get(f"/workers/{worker}", headers=stranger), 404, "not_found")
    assert_problem(api.post(f"/workers/{worker}/quiet", headers=stranger), 404, "not_found")
    assert api.post(f"/workers/{worker}/quiet", headers=a).json()["directive"] == "quiet"
    assert api.get(f"/workers/{worker}", headers=b).json()["directive"] == "running"

    # Lists, stats and history cover one tenant.
    for tenant in (a, b):
        listed = api.get("/tasks", params={"queue_name": queue, "limit": 100}, headers=tenant)
        assert {t["id"] for t in listed.json()["tasks"]} == mine[tenant["X-Tenant-Id"]]
        workers = api.get("/workers", headers=tenant).json()["workers"]
        assert [(w["worker_id"], w["tenant"]) for w in workers] == [(worker, tenant["X-Tenant-Id"])]
    stats = api.get("/queues", params={"queue_name": queue}, headers=b).json()["queues"]
    assert [(s["handler_name"], s["running"]) for s in stats] == [(name, N)]  # one completed
    assert api.get("/queues", params={"queue_name": queue}, headers=stranger).json()["queues"] == []
    for tenant, enqueued in ((a, N + 1), (stranger, 0)):  # a minute may have begun since
        points = api.get(f"/queues/{queue}/history", params={"minutes": 2}, headers=tenant)
        assert sum(p["enqueued"] for p in points.json()["points"]) == enqueued


def test_a_waiting_poll_is_woken_by_its_own_tenant_only(api: httpx.Client, name: str) -> None:
    """P-TEN-3, P-POLL-3: wake-ups are keyed by tenant: tenant A's enqueue hands its task
    to A's waiting poll at once, while B's poll of the same queue name keeps waiting."""
    a, b = _tenants()
    results: dict[str, tuple[float, list[dict]]] = {}

    def wait(label: str, tenant: dict[str, str], wait_ms: int) -> None:
        with httpx.Client(base_url=str(api.base_url), timeout=20) as own:
            start = time.monotonic()
            r = own.post("/workers/tasks/poll/batch", json={"handler_names": [name],
                         "wait_ms": wait_ms, "batch_size": 1}, headers=tenant)  # fmt: skip
            results[label] = (time.monotonic() - start, r.json()["tasks"])

    def parked() -> int:
        text = api.get("/metrics").text
        line = next(x for x in text.splitlines() if x.startswith("orch8_polls_waiting "))
        return int(float(line.split()[1]))

    before = parked()
    threads = [threading.Thread(target=wait, args=("a", a, 8000)),
               threading.Thread(target=wait, args=("b", b, 1500))]  # fmt: skip
    for t in threads:
        t.start()
    eventually(lambda: parked() >= before + 2)
    task = _enqueue(api, a, handler_name=name)
    for t in threads:
        t.join(timeout=15)
    elapsed, got = results["a"]
    assert [t["id"] for t in got] == [task["id"]] and elapsed < 5, results["a"]
    assert results["b"][1] == [], results["b"]


def test_queue_controls_are_per_tenant(api: httpx.Client, name: str) -> None:
    """P-TEN-3, P-CTRL-1: pausing tenant A's queue leaves B's queue of that name alone."""
    a, b = _tenants()
    queue = f"q-{name}"
    assert api.post(f"/queues/{queue}/pause", headers=a).json()["paused"] is True
    for tenant in (a, b):
        _enqueue(api, tenant, handler_name=name, queue_name=queue)
    poll = {"queue_name": queue, "handler_names": [name]}
    assert _drain(api, a, poll) == []
    assert len(_drain(api, b, poll)) == 1
    controls = api.get("/queues", headers=b).json()["queue_controls"]
    assert all(c["queue_name"] != queue for c in controls)
    assert api.post(f"/queues/{queue}/resume", headers=a).status_code == 200
    assert len(_drain(api, a, poll)) == 1


def test_label_routing_counts_the_tenants_own_workers(api: httpx.Client, name: str) -> None:
    """P-TEN-3, P-LABEL-3: another tenant's worker with the labels does not make a task
    routable; a worker of its own tenant does."""
    a, b = _tenants()
    _enqueue(api, a, handler_name=name, required_labels={"zone": name})

    def unroutable() -> int:
        rows = api.get("/queues", headers=a).json()["queues"]
        return int(next(r["unroutable"] for r in rows if r["handler_name"] == name))

    worker = {"worker_id": f"w-{name}", "labels": {"zone": name}}
    assert api.post("/workers", json=worker, headers=b).status_code == 200
    assert unroutable() == 1
    assert api.post("/workers", json=worker, headers=a).status_code == 200
    assert unroutable() == 0


def test_queue_depth_limit_is_per_tenant(
    start_server: Callable[..., RunningServer], name: str
) -> None:
    """P-TEN-3, P-BP-2: a full queue of tenant A refuses A's enqueues only."""
    server = start_server(**{"max-queue-depth": 2})
    a, b = _tenants()
    with httpx.Client(base_url=server.url, timeout=20) as api:
        for _ in range(2):
            _enqueue(api, a, handler_name=name)
        full = api.post("/tasks", json={"handler_name": name}, headers=a)
        assert_problem(full, 429, "rate_limited")
        assert api.post("/tasks", json={"handler_name": name}, headers=b).status_code == 201


def test_tenants_list_counts_tasks_and_workers(api: httpx.Client, name: str) -> None:
    """P-TEN-4: GET /tenants lists the tenants in use, sorted, with their counts."""
    a, b = _tenants()
    for _ in range(3):
        _enqueue(api, a, handler_name=name)
    api.post("/workers", json={"worker_id": f"w-{name}"}, headers=b)
    tenants = api.get("/tenants").json()["tenants"]
    names = [t["tenant"] for t in tenants]
    assert names == sorted(names)
    counts = {t["tenant"]: (t["tasks"], t["workers"]) for t in tenants}
    assert counts[a["X-Tenant-Id"]] == (3, 0)
    assert counts[b["X-Tenant-Id"]] == (0, 1)


def _sample(text: str, metric: str, **labels: str) -> float | None:
    """The value of `metric` whose labels include `labels` (label order is the client's)."""
    for line in text.splitlines():
        if line.startswith(metric + "{"):
            got = dict(p.split("=", 1) for p in line[len(metric) + 1 : line.index("}")].split(","))
            if all(got.get(k) == f'"{v}"' for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_label_queue_series_with_their_tenant(api: httpx.Client, name: str) -> None:
    """P-TEN-4: per-queue and per-worker-state series carry `tenant`."""
    a, b = _tenants()
    _enqueue(api, a, handler_name=name)
    assert api.post("/workers", json={"worker_id": f"w-{name}"}, headers=b).status_code == 200
    text = api.get("/metrics").text
    ta, tb = a["X-Tenant-Id"], b["X-Tenant-Id"]
    assert _sample(text, "orch8_tasks_enqueued_total", tenant=ta, handler=name) == 1
    assert _sample(text, "orch8_tasks_enqueued_total", tenant=tb, handler=name) is None
    assert _sample(text, "orch8_queue_tasks", tenant=ta, handler=name, state="pending") == 1
    assert _sample(text, "orch8_workers", tenant=tb, state="running") == 1
    assert _sample(text, "orch8_workers", tenant=ta, state="running") == 0
    assert "\norch8_polls_waiting " in text  # process-wide series stay unlabelled


def test_metrics_render_only_the_given_tenants() -> None:
    """P-TEN-4: a `metrics` key sees its tenants' series and the process-wide ones."""
    metrics = Metrics()
    metrics.enqueued.labels("team-a", "q", "h").inc()
    metrics.enqueued.labels("team-b", "q", "h").inc()
    stats = {
        t: {"queues": [], "queue_controls": [], "handler_controls": []}
        for t in ("team-a", "team-b")
    }
    text = metrics.render(stats, 3, {("team-a", "running"): 1}, {"team-a"}).decode()
    assert 'tenant="team-a"' in text and 'tenant="team-b"' not in text
    assert "orch8_polls_waiting 3.0" in text
    everything = metrics.render(stats, 3, {}).decode()
    assert 'tenant="team-b"' in everything


# Migrations: databases written before tenants (P-TEN-1: old rows are tenant `default`) --

_OLD_TASK = (
    "INSERT INTO tasks (id, handler_name, queue_name, status, priority, params, context, "
    "headers, attempt, max_attempts, retry, run_at, idempotency_key, created_at, updated_at) "
    "VALUES ('t-old', 'h', 'q', 'pending', 0, '{}', '{}', '{}', 0, 3, '{}', 1, 'k', 1, 1)"
)
_OLD_WORKER = (
    "INSERT INTO workers (worker_id, state, directive, handlers, queues, labels, "
    "registered_at, last_heartbeat_at) VALUES ('w-old', 'running', 'running', '[]', '[]', "
    "'{}', 1, 1)"
)


def test_a_sqlite_database_of_schema_v2_migrates_to_tenant_default(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    with sqlite3.connect(path) as c:
        for step in SQLITE_MIGRATIONS[:2]:
            c.executescript(step)
        c.execute(_OLD_TASK)
        c.execute(_OLD_WORKER)
        c.execute("INSERT INTO queue_controls (queue_name, paused, updated_at) VALUES ('q', 1, 1)")
        c.execute("PRAGMA user_version = 2")

    async def main() -> None:
        storage = SqliteStorage(str(path))
        await storage.open()
        try:
            task = await storage.get_task("t-old")
            assert task is not None and task["tenant"] == "default"
            listed = await storage.list_tasks(TaskFilter(tenant="default"), 10, None)
            assert [t["id"] for t in listed] == ["t-old"]
            assert await storage.list_tasks(TaskFilter(tenant="other"), 10, None) == []
            assert await storage.queue_depth("default", "q", 10) == 1  # P-BP-2 per tenant
            assert await storage.queue_depth("other", "q", 10) == 0
            worker = await storage.get_worker("default", "w-old")
            assert worker is not None and worker["tenant"] == "default"
            queues, _ = await storage.controls()
            assert [(q["tenant"], q["queue_name"], q["paused"]) for q in queues] == [
                ("default", "q", True)
            ]
            claim = ClaimParams(
                "default", "q", ["h"], 1, 2, 1000, None, lambda: "l", capped=True
            )  # capped: reads controls
            assert (await storage.claim(claim))[0] == []  # still paused
            await storage.set_queue_control("default", "q", {"paused": False}, 3)
            assert [t["id"] for t in (await storage.claim(claim))[0]] == ["t-old"]
        finally:
            await storage.close()

    asyncio.run(main())


def test_a_postgres_database_of_schema_v3_migrates_to_tenant_default(
    pg: PgCluster, name: str
) -> None:
    url = pg.create_database(name)

    async def main() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(
                "CREATE TABLE orch8_schema_migrations (version integer PRIMARY KEY, "
                "applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for version, sql in PG_MIGRATIONS[:3]:
                await conn.execute(sql)
                await conn.execute("INSERT INTO orch8_schema_migrations VALUES ($1)", version)
            await conn.execute(_OLD_TASK)
            await conn.execute(_OLD_WORKER)
            assert await pg_migrate(conn) == len(PG_MIGRATIONS) - 3
            rows = await conn.fetch("SELECT tenant FROM tasks UNION ALL SELECT tenant FROM workers")
            assert [r[0] for r in rows] == ["default", "default"]
            # Unique per tenant now: the same key and worker id in another tenant.
            await conn.execute(_OLD_TASK.replace("'t-old'", "'t-new'").replace(
                "(id,", "(tenant, id,").replace("VALUES (", "VALUES ('other', "))  # fmt: skip
            await conn.execute(_OLD_WORKER.replace("(worker_id,", "(tenant, worker_id,").replace(
                "VALUES (", "VALUES ('other', "))  # fmt: skip
            assert (
                await conn.fetchval("SELECT count(*) FROM tasks WHERE idempotency_key = 'k'") == 2
            )
            assert await pg_history.queue_depth(conn, "default", "q", 10) == 1  # P-BP-2
            assert await pg_history.queue_depth(conn, "nobody", "q", 10) == 0
        finally:
            await conn.close()

    asyncio.run(main())
