"""The task state machine (lifecycle/transitions.py): each rule on its own, the storage's
set-based fast paths checked against the rule they implement (same inputs, both
backends), and the effects of a transition wherever it is made (issue 29)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import assert_problem, claim

from orch8_server import ids
from orch8_server.lifecycle import transitions
from orch8_server.lifecycle.effects import UnitOfWork
from orch8_server.lifecycle.tasks import new_task_row
from orch8_server.problems import Problem
from orch8_server.storage import open_storage

NOW = 1_700_000_000_000


def running(now: int = NOW, attempt: int = 1, max_attempts: int = 3) -> dict[str, Any]:
    row = new_task_row(
        {"handler_name": "h", "params": {"n": 1}, "retry": {"max_attempts": max_attempts}},
        now - 1000,
    )
    row.update(status="running", attempt=attempt, worker_id="w1", lease_id=ids.lease_id(),
               lease_ms=30_000, lease_started_at=now - 500, lease_expires_at=now + 29_500,
               started_at=now - 500)  # fmt: skip
    return row


# The rules ------------------------------------------------------------------------------


def test_complete_ends_the_attempt_with_the_reply_replays_get() -> None:
    task = running()
    t = transitions.complete(task, NOW, {"ok": True})
    assert t.kind == "completed" and t.freed and task["status"] == "running"  # input kept
    assert t.task["status"] == "completed" and t.task["output"] == {"ok": True}
    assert t.attempt is None  # nothing to store: the completed row is the attempt's record
    reply = {"task_id": task["id"], "status": "completed", "attempt": 1, "attempts_left": 2,
             "next_attempt_at": None, "error_code": None}  # fmt: skip
    assert t.reply == reply
    assert transitions.completed_attempt(t.task, ["l-older"]) == {
        "task_id": task["id"], "lease_id": task["lease_id"], "attempt": 1, "worker_id": "w1",
        "started_at": NOW - 500, "ended_at": NOW, "outcome": "completed", "error": None,
        "reply": reply,
    }  # fmt: skip
    # A stored record of the last lease wins (an operator's resolution, P-MANUAL-1; a
    # success stored before issue 30), and only completed rows have one.
    assert transitions.completed_attempt(t.task, [task["lease_id"]]) is None
    assert transitions.completed_attempt(task, []) is None
    resolved = transitions.resolve(
        {**task, "status": "pending", "lease_id": None}, NOW, "completed", {}
    )
    assert transitions.completed_attempt(resolved.task, []) is None


def test_fail_requeues_while_attempts_are_left_and_fails_the_last() -> None:
    t = transitions.fail(running(), NOW, "boom", retryable=True, retry_after_ms=0)
    assert (t.kind, t.task["status"], t.task["run_at"]) == ("requeued", "pending", NOW)
    later = transitions.fail(running(), NOW, "boom", retryable=True, rng=random.Random(1))
    assert later.task["status"] == "scheduled" and later.reply["next_attempt_at"] is not None
    assert 800 <= later.task["run_at"] - NOW <= 1000  # P-RETRY-2: 1 s minus up to 20 % jitter
    last = transitions.fail(running(attempt=3), NOW, "boom", retryable=True)
    assert (last.kind, last.task["status"], last.reply["attempts_left"]) == ("failed", "failed", 0)
    fatal = transitions.fail(running(), NOW, "bad input", code="bad_input")
    assert fatal.kind == "failed" and fatal.reply["error_code"] == "bad_input"
    assert fatal.attempt is not None and fatal.attempt["error"]["code"] == "bad_input"
    kept = transitions.fail(running(), NOW, "x", checkpoint=(None,))
    assert "checkpoint" in kept.fields and kept.task["checkpoint"] is None  # null is a value
    assert "checkpoint" not in transitions.fail(running(), NOW, "x").fields


def test_release_gives_the_attempt_back_and_reclaim_spends_it() -> None:
    r = transitions.release(running(attempt=2), NOW, 5000)
    assert (r.kind, r.task["status"], r.task["attempt"]) == ("released", "scheduled", 1)
    assert r.attempt is not None and r.attempt["attempt"] == 2  # the record keeps its number
    again = transitions.reclaim(running(attempt=2), NOW, "lease_expired", "expired")
    assert (again.task["status"], again.task["attempt"]) == ("pending", 2)
    last = transitions.reclaim(running(attempt=3), NOW, "worker_lost", "gone")
    assert last.task["status"] == "failed" and last.task["error"]["code"] == "worker_lost"
    assert last.attempt is not None and last.attempt["outcome"] == "worker_lost"


def test_cancel_resolve_and_retry_check_the_state_they_start_from() -> None:
    pending = {**running(), "status": "pending"}
    c = transitions.cancel(pending, NOW, "user")
    assert c is not None and c.attempt is None and not c.freed
    ran = transitions.cancel(running(), NOW, None)
    assert ran is not None and ran.freed and ran.attempt is not None
    assert ran.task["lease_id"] is not None  # P-CANCEL-2: its worker hears task_cancelled
    assert transitions.cancel(c.task, NOW, "again") is None  # a repeat changes nothing
    with pytest.raises(Problem) as done:
        transitions.cancel({**running(), "status": "completed"}, NOW, None)
    assert done.value.code == "invalid_state"
    manual = transitions.resolve(running(), NOW, "failed", {"error": "by hand"})
    assert manual.kind == "resolved" and manual.task["error"]["code"] == "manual"
    assert manual.attempt is not None and manual.attempt["error"]["code"] == "manual"
    with pytest.raises(Problem):
        transitions.retry(running(), NOW, None)
    back = transitions.retry(manual.task, NOW, 2)
    assert back.task["status"] == "pending" and back.task["max_attempts"] == 1 + 2
    assert back.task["finished_at"] is None and back.task["good_until"] is None


# The SQL fast paths against the rules -----------------------------------------------------


def _storage_url(backend: str, tmp_path: Path, new_database: Callable[[], str]) -> str:
    return str(tmp_path / "t.db") if backend == "sqlite" else new_database()


def _same(a: dict[str, Any], b: dict[str, Any], differ: set[str]) -> None:
    assert {k: v for k, v in a.items() if k not in differ} == {
        k: v for k, v in b.items() if k not in differ
    }


def test_set_based_completion_stores_what_the_rule_says(
    backend: str, tmp_path: Path, new_database: Callable[[], str]
) -> None:
    """`Tx.complete_running` (one statement for a batch) against `transitions.complete`
    applied by a unit of work: the same task row, attempt record (read from the row) and
    reply."""

    async def main() -> None:
        storage = open_storage(_storage_url(backend, tmp_path, new_database))
        await storage.open()
        try:
            fast, ruled = running(), running()
            async with storage.transaction() as tx:
                await tx.insert_task(fast)
                await tx.insert_task(ruled)
            output = {"x": [1, "two", None], "nested": {"y": 1.5}}
            async with storage.transaction() as tx:
                done = await tx.complete_running(
                    "default", [(fast["id"], fast["lease_id"], output)], NOW
                )
            change = transitions.complete(ruled, NOW, output)
            async with storage.transaction() as tx:
                uow = UnitOfWork(NOW, tx=tx)
                await uow.apply(change)
            assert len(done) == 1 and transitions.outcome(done[0])["status"] == "completed"
            assert {**transitions.outcome(done[0]), "task_id": ruled["id"]} == change.reply
            rows = [await storage.get_task(t["id"]) for t in (fast, ruled)]
            _same(rows[0], rows[1], {"id", "seq", "lease_id"})  # type: ignore[arg-type]
            # Neither stores an attempt: each completed row is its attempt's record.
            assert [await storage.list_attempts(t["id"]) for t in (fast, ruled)] == [[], []]
            a, b = (transitions.completed_attempt(row, ()) for row in rows)  # type: ignore[arg-type]
            assert a is not None and b is not None
            assert a["reply"] == {**b["reply"], "task_id": fast["id"]}
            _same(dict(a), dict(b), {"task_id", "lease_id", "reply"})
        finally:
            await storage.close()

    asyncio.run(main())


def test_set_based_expiry_stores_what_the_rule_says(
    backend: str, tmp_path: Path, new_database: Callable[[], str]
) -> None:
    """`Tx.expire_overdue` (good_until passed while waiting) against `transitions.expire`."""

    async def main() -> None:
        storage = open_storage(_storage_url(backend, tmp_path, new_database))
        await storage.open()
        try:
            rows = []
            for _ in range(2):
                row = new_task_row({"handler_name": "h"}, NOW - 1000)
                row["good_until"] = NOW - 1
                rows.append(row)
            async with storage.transaction() as tx:
                for row in rows:
                    await tx.insert_task(row)
            change = transitions.expire(rows[1], NOW)
            async with storage.transaction() as tx:
                await UnitOfWork(NOW, tx=tx).apply(change)
            async with storage.transaction() as tx:
                assert await tx.expire_overdue(NOW) == 1  # only the one the rule did not end
            stored = [await storage.get_task(r["id"]) for r in rows]
            assert stored[0] is not None and stored[0]["status"] == "expired"
            _same(stored[0], stored[1], {"id", "seq"})  # type: ignore[arg-type]
        finally:
            await storage.close()

    asyncio.run(main())


# Effects wherever a transition is made ----------------------------------------------------


def _counter(api: httpx.Client, name: str, handler: str) -> float:
    prefix = f'orch8_tasks_{name}_total{{handler="{handler}",queue="default",tenant="default"}} '
    for line in api.get("/metrics").text.splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix) :])
    return 0.0


def test_a_step_cancelled_by_its_instance_is_counted_and_frees_its_slot(
    api: httpx.Client, name: str
) -> None:
    """Before the effects module, a cancel made by a workflow never reached the cancelled
    counter, and the capped slot it freed was announced by an unowned asyncio task."""
    r = api.post("/sequences", json={"name": name, "steps": [{"id": "s", "handler": name}]})
    assert r.status_code == 201
    limit = api.put(f"/handlers/{name}/limit", json={"max_running": 1})
    assert limit.status_code == 200, limit.text
    first = api.post("/instances", json={"sequence": name}).json()
    second = api.post("/instances", json={"sequence": name}).json()
    task = claim(api, name)
    assert task["context"]["instance_id"] in (first["id"], second["id"])
    # The cap holds the other step back until the running one is cancelled.
    held = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 0})
    assert held.status_code == 204
    cancelled = api.post(f"/instances/{task['context']['instance_id']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert _counter(api, "cancelled", name) == 1.0
    hb = api.post(f"/workers/tasks/{task['id']}/heartbeat", json={"lease_id": task["lease"]["id"]})
    assert_problem(hb, 409, "task_cancelled")
    nxt = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 2000})
    assert nxt.status_code == 200 and nxt.json()["id"] != task["id"]
