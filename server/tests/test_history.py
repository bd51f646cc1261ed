"""Queue history (P-OBS-5): GET /queues/{queue_name}/history, one point per minute.

Real traffic through HTTP on both backends; on PostgreSQL two replicas add their counts
up. The stored minutes (additive upserts, merged histograms, depth, pruning) are the
storage contract's (storage_contract/test_workers.py).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import assert_problem, claim, enqueue, eventually, launch, stop_server

from orch8_server import timefmt
from orch8_server.lifecycle.history import percentile, wait_bucket


def _history(api: httpx.Client, queue: str, **params: Any) -> dict[str, Any]:
    r = api.get(f"/queues/{queue}/history", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def _total(body: dict[str, Any], field: str) -> int:
    return sum(p[field] for p in body["points"])


def test_p_obs_5_wait_buckets_are_fixed_and_percentiles_interpolate() -> None:
    """Bucket bounds are the same everywhere (replicas' histograms add up); a percentile
    lands inside its bucket, within ~19 % of the true wait."""
    assert wait_bucket(0) == 0 and wait_bucket(-5) == 0 and wait_bucket(1) == 1
    assert wait_bucket(2) == 5 and wait_bucket(16) == 17
    # Bucket 27 holds [2^6.5, 2^6.75) = [90.5, 107.6) ms.
    assert [wait_bucket(w) for w in (91, 100, 107)] == [27] * 3
    assert wait_bucket(90) == 26 and wait_bucket(108) == 28
    assert percentile({}, 0.5) is None
    for wait in (3, 40, 300, 5_000, 90_000):
        got = percentile({wait_bucket(wait): 10}, 0.5)
        assert got is not None and wait / 1.2 <= got <= wait * 1.2, (wait, got)
    hist = {wait_bucket(10): 90, wait_bucket(1000): 10}
    p50, p95 = percentile(hist, 0.5), percentile(hist, 0.95)
    assert p50 is not None and p95 is not None
    assert 8 <= p50 <= 12 and 800 <= p95 <= 1200


def test_p_obs_5_history_counts_the_current_minutes_traffic(api: httpx.Client, name: str) -> None:
    queue = "hist-" + name
    first = time.monotonic()
    for _ in range(4):
        enqueue(api, name, queue_name=queue)
    time.sleep(0.3)  # the queue wait under test (an input, not a synchronisation)
    tasks = [claim(api, name, queue_name=queue) for _ in range(3)]
    waited_ms = (time.monotonic() - first) * 1000
    lease = [t["lease"]["id"] for t in tasks]
    base = f"/workers/tasks/{tasks[0]['id']}"
    assert api.post(base + "/complete", json={"lease_id": lease[0]}).status_code == 200
    final = {"lease_id": lease[1], "error": "boom", "retryable": False}
    assert api.post(f"/workers/tasks/{tasks[1]['id']}/fail", json=final).status_code == 200
    again = {"lease_id": lease[2], "error": "flaky", "retryable": True, "retry_after_ms": 0}
    assert api.post(f"/workers/tasks/{tasks[2]['id']}/fail", json=again).status_code == 200

    body = _history(api, queue, minutes=5)
    assert body["queue_name"] == queue and body["bucket_ms"] == 60_000
    ats = [timefmt.parse(p["at"]) for p in body["points"]]
    assert len(ats) == 5 and all(b - a == 60_000 for a, b in itertools.pairwise(ats))
    generated = timefmt.parse(body["generated_at"])
    assert generated is not None and ats[-1] <= generated < ats[-1] + 60_000  # current minute
    # Counted at once: the answering replica adds its own counts before reading.
    assert (_total(body, "enqueued"), _total(body, "completed"), _total(body, "failed")) == (
        4,
        1,
        2,
    )
    waits = [p for p in body["points"] if p["wait_p50_ms"] is not None]
    assert waits, body
    for p in waits:  # every claim waited >= 300 ms and no longer than the test ran
        assert 250 <= p["wait_p50_ms"] <= p["wait_p95_ms"] <= waited_ms * 1.2 + 5, p
    # Depth: the unclaimed task and the retried one are pending (sampled every few s).
    eventually(lambda: _history(api, queue, minutes=1)["points"][-1]["depth"] == 2, timeout=12)
    assert len(_history(api, queue)["points"]) == 60  # default: the whole hour


def test_p_obs_5_a_queue_without_traffic_answers_zeros(api: httpx.Client, name: str) -> None:
    points = _history(api, "quiet-" + name, minutes=3)["points"]
    assert [(p["enqueued"], p["completed"], p["failed"]) for p in points] == [(0, 0, 0)] * 3
    assert {p["depth"] for p in points} == {None}
    assert {p["wait_p50_ms"] for p in points} | {p["wait_p95_ms"] for p in points} == {None}


@pytest.mark.parametrize("minutes", ["0", "61", "-1", "ten", "1.5"])
def test_p_obs_5_bad_minutes_is_422(api: httpx.Client, minutes: str) -> None:
    body = assert_problem(
        api.get("/queues/default/history", params={"minutes": minutes}), 422, "validation_error"
    )
    assert body["errors"][0]["pointer"].endswith("/minutes")


def test_p_obs_5_bad_queue_name_is_422(api: httpx.Client) -> None:
    assert_problem(api.get("/queues/bad name/history"), 422, "validation_error")
    assert_problem(api.get("/queues/" + "q" * 201 + "/history"), 422, "validation_error")


@pytest.mark.backends("postgresql")  # replicas share a database on PostgreSQL only
def test_p_obs_5_replicas_add_up_and_shutdown_flushes(
    backend: str, new_database: Callable[[], str], tmp_path: Path
) -> None:
    """Two replicas on one PostgreSQL database: each adds its own counts, both answer
    the same, and a replica's last counts land when it stops."""
    url = new_database()
    a, b = launch(url, tmp_path / "a.log"), launch(url, tmp_path / "b.log")
    queue = "hist-replicas"
    try:
        with httpx.Client(base_url=a.url, timeout=20) as ca, httpx.Client(base_url=b.url) as cb:
            for _ in range(2):
                enqueue(ca, "h", queue_name=queue)
            for _ in range(3):
                enqueue(cb, "h", queue_name=queue)
            claim(cb, "h", queue_name=queue)
            claim(ca, "h", queue_name=queue)
            # B's counts reach A within its flush interval (at most 5 s behind).
            eventually(lambda: _total(_history(ca, queue, minutes=2), "enqueued") == 5, 10)
            eventually(lambda: _total(_history(cb, queue, minutes=2), "enqueued") == 5, 10)
            fields = ("enqueued", "completed", "failed", "wait_p50_ms", "wait_p95_ms")

            def same() -> bool:
                pa, pb = _history(ca, queue, minutes=2), _history(cb, queue, minutes=2)
                return [[p[f] for f in fields] for p in pa["points"]] == [
                    [p[f] for f in fields] for p in pb["points"]
                ]

            eventually(same, 10)
            assert sum(p["wait_p50_ms"] is not None for p in _history(ca, queue)["points"]) >= 1
            enqueue(cb, "h", queue_name=queue)
        stop_server(b)  # at once: the count is in memory only until the shutdown flush
        with httpx.Client(base_url=a.url, timeout=20) as ca:
            assert _total(_history(ca, queue, minutes=2), "enqueued") == 6
    finally:
        stop_server(a)
        if b.running:
            stop_server(b)
