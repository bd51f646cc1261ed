"""The test clock (P-CLOCK-1..5): a server started with --test-clock reads a clock that
stands still until POST /clock/advance moves it, and the advance fires every timer then
due before it answers. SQLite only: the flag is refused with PostgreSQL (tested below)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import assert_problem, key_entry

from orch8_server.testing import RunningServer
from orch8_server.timefmt import parse

ADMIN, OPERATOR = "o8k_admin_key_of_the_clock_tests", "o8k_operator_key_of_the_clock_test"
HOUR, TEN_MINUTES = 3_600_000, 600_000


@pytest.fixture(scope="module")
def clocked(start_server: Callable[..., RunningServer]) -> RunningServer:
    # A reaper interval of a minute: what an advance fires is fired by the advance itself,
    # not by a service tick that happened to follow it.
    return start_server(**{"test-clock": True, "lease-ms": 60_000, "dead-after-ms": 30_000,
                           "reaper-interval-ms": 60_000})  # fmt: skip


@pytest.fixture
def api(clocked: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=clocked.url, timeout=10) as client:
        yield client


def advance(api: httpx.Client, **body: Any) -> dict:
    r = api.post("/clock/advance", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def now(api: httpx.Client) -> int:
    value = parse(api.get("/clock").json()["now"])
    assert value is not None
    return value


def claim(api: httpx.Client, handler: str) -> dict:
    r = api.post("/workers/tasks/poll", json={"handler_names": [handler], "wait_ms": 0})
    assert r.status_code == 200, r.text
    return r.json()


def test_the_clock_stands_still_and_advances_by_what_is_asked_P_CLOCK_1(api: httpx.Client) -> None:
    first = api.get("/clock").json()
    assert first["mode"] == "test" and first["advanced_ms"] == 0
    time.sleep(0.05)  # real time passes; the server's does not
    assert api.get("/clock").json()["now"] == first["now"]
    body = advance(api, by_ms=1234)
    assert body["advanced_ms"] == 1234
    assert parse(body["now"]) == parse(first["now"]) + 1234  # type: ignore[operator]


def test_a_scheduled_task_is_skipped_to_and_claimable_at_once_P_CLOCK_2_3(
    api: httpx.Client, name: str
) -> None:
    from orch8_server.timefmt import iso

    at = now(api) + HOUR
    task = api.post("/tasks", json={"handler_name": name, "run_at": iso(at)}).json()
    assert task["status"] == "scheduled"
    assert parse(api.get("/clock").json()["next_timer_at"]) <= at  # type: ignore[operator]
    advance(api, by_ms=HOUR - 1)
    assert api.get(f"/tasks/{task['id']}").json()["status"] == "scheduled"
    advance(api, to_next_timer=True)
    assert now(api) == at
    assert api.get(f"/tasks/{task['id']}").json()["status"] == "pending"
    assert claim(api, name)["id"] == task["id"]


def test_a_retry_backoff_of_ten_minutes_is_skipped_P_CLOCK_2(api: httpx.Client, name: str) -> None:
    retry = {"max_attempts": 2, "initial_backoff_ms": TEN_MINUTES, "jitter": 0}
    task = api.post("/tasks", json={"handler_name": name, "retry": retry}).json()
    got = claim(api, name)
    failed = api.post(f"/workers/tasks/{task['id']}/fail",
                      json={"lease_id": got["lease"]["id"], "error": "x", "retryable": True})  # fmt: skip
    assert failed.status_code == 200 and failed.json()["status"] == "scheduled", failed.text
    advance(api, by_ms=TEN_MINUTES)
    again = claim(api, name)
    assert (again["id"], again["attempt"]) == (task["id"], 2)


def test_an_idle_worker_declared_dead_by_a_skip_keeps_the_task_it_is_woken_for_P_CLOCK_2(
    api: httpx.Client, clocked: RunningServer, name: str
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from orch8_server.timefmt import iso

    worker = f"w-{name}"
    assert api.post("/workers", json={"worker_id": worker, "handlers": [name]}).status_code < 300
    task = api.post("/tasks", json={"handler_name": name, "run_at": iso(now(api) + TEN_MINUTES)})
    body = {"handler_names": [name], "worker_id": worker, "wait_ms": 10_000}
    with ThreadPoolExecutor(1) as pool, httpx.Client(base_url=clocked.url, timeout=20) as other:
        parked = pool.submit(other.post, "/workers/tasks/poll", json=body)

        def polling() -> bool:
            rows = api.get("/queues").json()["queues"]
            return any(r["handler_name"] == name and r["active_pollers"] for r in rows)

        deadline = time.monotonic() + 10
        while not polling():  # the poll is parked once the server has seen it
            assert time.monotonic() < deadline, "the poll never showed up in GET /queues"
            time.sleep(0.01)
        # Ten minutes of silence: the worker is dead, then the task is due and the parked
        # poll claims it; the same advance must not reclaim it as worker_lost.
        advance(api, to_next_timer=True)
        got = parked.result(timeout=20)
    assert got.status_code == 200 and got.json()["id"] == task.json()["id"], got.text
    held = api.get(f"/tasks/{got.json()['id']}").json()
    assert (held["status"], held["attempt"]) == ("running", 1), held


def test_leases_good_until_and_silent_workers_follow_the_clock_P_CLOCK_2(
    api: httpx.Client, name: str
) -> None:
    from orch8_server.timefmt import iso

    held = api.post("/tasks", json={"handler_name": name}).json()
    lease = claim(api, name)["lease"]
    overdue = api.post("/tasks", json={"handler_name": name + "_x",
                                      "good_until": iso(now(api) + 5_000)}).json()  # fmt: skip
    worker = f"w-{name}"
    assert api.post("/workers", json={"worker_id": worker, "handlers": [name]}).status_code in (
        200,
        201,
    )
    before = api.get(f"/tasks/{held['id']}").json()
    assert before["status"] == "running" and lease["expires_at"] == before["lease"]["expires_at"]
    advance(api, by_ms=60_001)  # past the lease, good_until and dead_after, in one call
    after = api.get(f"/tasks/{held['id']}").json()
    assert after["status"] == "pending" and after["attempt"] == 1, after
    assert api.get(f"/tasks/{overdue['id']}").json()["status"] == "expired"
    assert api.get(f"/workers/{worker}").json()["state"] == "dead"


def test_a_workflow_with_a_one_hour_sleep_finishes_in_seconds_not_an_hour_P_CLOCK_2(
    api: httpx.Client, name: str
) -> None:
    started = time.monotonic()
    r = api.post("/sequences", json={"name": name, "steps": [
        {"id": "a", "handler": name},
        {"id": "nap", "handler": "sleep", "params": {"duration_ms": HOUR}},
        {"id": "b", "handler": name, "params": {"got": {"$from": "steps.a.output"}}},
    ]})  # fmt: skip
    assert r.status_code in (200, 201), r.text
    inst = api.post("/instances", json={"sequence": name}).json()

    def work(output: Any) -> dict:
        task = claim(api, name)
        done = api.post(f"/workers/tasks/{task['id']}/complete",
                        json={"lease_id": task["lease"]["id"], "output": output})  # fmt: skip
        assert done.status_code == 200, done.text
        return task

    work({"n": 1})
    assert api.get(f"/instances/{inst['id']}").json()["status"] == "running"
    body = advance(api, to_next_timer=True)
    assert body["advanced_ms"] == HOUR, body
    assert work("done")["params"] == {"got": {"n": 1}}
    final = api.get(f"/instances/{inst['id']}", params={"wait_ms": 2000}).json()
    assert final["status"] == "completed", final
    assert time.monotonic() - started < 10.0  # the hour passed on the test clock only


def test_advance_takes_exactly_one_of_by_ms_and_to_next_timer(api: httpx.Client) -> None:
    for body in ({}, {"by_ms": 1, "to_next_timer": True}, {"to_next_timer": False}):
        assert_problem(api.post("/clock/advance", json=body), 422, "validation_error")
    assert_problem(api.post("/clock/advance", json={"by_ms": -1}), 422, "validation_error")


def test_without_the_flag_the_clock_is_the_systems_and_is_not_advanced_P_CLOCK_1(
    start_server: Callable[..., RunningServer],
) -> None:
    server = start_server()
    with httpx.Client(base_url=server.url, timeout=10) as api:
        before = time.time() * 1000
        body = api.get("/clock").json()
        assert body["mode"] == "system" and abs(parse(body["now"]) - before) < 5_000  # type: ignore[operator]
        assert_problem(api.post("/clock/advance", json={"by_ms": 1}), 409, "clock_not_controllable")


def test_with_keys_only_an_admin_key_reads_or_moves_the_clock_P_CLOCK_4(
    start_server: Callable[..., RunningServer], tmp_path: Path
) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text(key_entry("admin", ADMIN, "admin") + key_entry("op", OPERATOR, "operator"))
    server = start_server(**{"test-clock": True, "keys-file": keys})
    with httpx.Client(base_url=server.url, timeout=10) as api:
        op = {"Authorization": f"Bearer {OPERATOR}"}
        assert_problem(api.post("/clock/advance", json={"by_ms": 1}, headers=op), 403, "forbidden")
        assert_problem(api.get("/clock", headers=op), 403, "forbidden")
        assert_problem(api.get("/clock"), 401, "unauthorized")
        admin = {"Authorization": f"Bearer {ADMIN}"}
        assert api.post("/clock/advance", json={"by_ms": 5}, headers=admin).status_code == 200


def test_the_flag_is_refused_with_postgresql_P_CLOCK_5() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "orch8_server", "--test-clock", "--db", "postgresql://x@h/db"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2 and "--test-clock needs SQLite" in out.stderr, out.stderr
