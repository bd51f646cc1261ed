"""Queue stats, pollers, metrics, health and build info (P-OBS-1..3)."""

from __future__ import annotations

import hashlib
import re
import threading

import httpx
from conftest import REPO, claim, enqueue, eventually


def _row(api: httpx.Client, queue: str, handler: str) -> dict | None:
    rows = api.get("/queues", params={"queue_name": queue}).json()["queues"]
    return next((r for r in rows if r["handler_name"] == handler), None)


def test_queue_depth_and_stuck_queue_signal(api: httpx.Client, server, name: str) -> None:
    queue = "obs-" + name
    enqueue(api, name, queue_name=queue)
    enqueue(api, name, queue_name=queue)
    enqueue(api, name, queue_name=queue, delay_ms=600000)
    row = _row(api, queue, name)
    assert row["pending"] == 2 and row["scheduled"] == 1 and row["running"] == 0
    assert (
        row["active_pollers"] == 0 and row["oldest_pending_age_ms"] >= 0
    )  # stuck: work, nobody polling
    claim(api, name, queue_name=queue, worker_id="obs-worker")
    row = _row(api, queue, name)
    assert row["pending"] == 1 and row["running"] == 1 and row["active_pollers"] == 1

    other = "idle-" + name
    done = threading.Event()

    def wait() -> None:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            c.post(
                "/workers/tasks/poll",
                json={"handler_names": [other], "queue_name": queue, "wait_ms": 1000},
            )
        done.set()

    threading.Thread(target=wait).start()
    polled = eventually(lambda: _row(api, queue, other), timeout=3)
    assert polled["pending"] == 0 and polled["active_pollers"] == 1
    assert done.wait(5)


def test_metrics_are_prometheus_text(api: httpx.Client, name: str) -> None:
    enqueue(api, name)
    claim(api, name)
    r = api.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert (
        f'orch8_tasks_claimed_total{{handler="{name}",queue="default",tenant="default"}} 1.0'
        in text
    )
    assert (
        f'orch8_queue_tasks{{handler="{name}",queue="default",state="running",tenant="default"}} 1.0'
        in text
    )
    assert "orch8_polls_waiting" in text


def test_problem_answers_are_counted_by_code(api: httpx.Client, name: str) -> None:
    """orch8_problems_total{code}: whole answers and batch items (feeds the emitted-code check)."""

    def count(code: str) -> float:
        line = f'orch8_problems_total{{code="{code}"}} '
        text = api.get("/metrics").text
        return next((float(x[len(line) :]) for x in text.splitlines() if x.startswith(line)), 0)

    before = count("not_found"), count("lease_lost")
    assert api.get("/tasks/task_nope").status_code == 404
    items = [{"task_id": "task_nope", "output": 1}]
    assert api.post("/workers/tasks/complete/batch", json={"items": items}).status_code == 200
    task = enqueue(api, name)
    claimed = claim(api, name)
    api.post(f"/workers/tasks/{task['id']}/release", json={}).raise_for_status()
    late = {"lease_id": claimed["lease"]["id"], "output": 1}
    assert api.post(f"/workers/tasks/{task['id']}/complete", json=late).status_code == 409
    assert (count("not_found"), count("lease_lost")) == (before[0] + 2, before[1] + 1)


def test_health_and_info(api: httpx.Client, backend: str) -> None:
    assert api.get("/health/live").json() == {"status": "ok", "checks": {}}
    assert api.get("/health/ready").json()["checks"] == {"storage": "ok"}
    info = api.get("/info").json()
    assert info["spec_sha256"] == hashlib.sha256((REPO / "openapi.yaml").read_bytes()).hexdigest()
    assert info["storage"] == backend and info["defaults"]["lease_ms"] == 60000
    defaults = info["defaults"]
    # FAST timings from conftest; the deprecated aliases carry the same values.
    assert defaults["heartbeat_interval_ms"] == defaults["worker_heartbeat_interval_ms"] == 200
    assert defaults["dead_after_ms"] == defaults["worker_dead_after_ms"] == 1500
    version = re.search(r"^  version: (\S+)$", (REPO / "openapi.yaml").read_text(), re.M)
    assert version is not None and defaults["wait_ms"] == 30000
    assert info["spec_version"] == version.group(1)


def test_sigterm_releases_waiting_polls_at_once(start_server) -> None:
    """A draining server answers a waiting long-poll at once instead of after wait_ms."""
    import time

    server = start_server(**{"max-wait-ms": 30000})
    result: dict = {}

    def wait() -> None:
        with httpx.Client(base_url=server.url, timeout=40) as c:
            start = time.monotonic()
            r = c.post("/workers/tasks/poll", json={"handler_names": ["drain"], "wait_ms": 30000})
            result.update(status=r.status_code, waited=time.monotonic() - start)

    thread = threading.Thread(target=wait)
    thread.start()
    with httpx.Client(base_url=server.url) as api:
        eventually(lambda: _row(api, "default", "drain"), timeout=3)
    started = time.monotonic()
    server.stop()  # SIGTERM, waits for exit
    thread.join(10)
    # Well under uvicorn's 5 s graceful-shutdown timeout: the drain released the poll.
    assert result["status"] == 204 and result["waited"] < 2.5
    assert time.monotonic() - started < 3
