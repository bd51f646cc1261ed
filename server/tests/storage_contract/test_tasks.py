"""Contract: tasks and attempts (Tx.insert_task .. running_tasks_of; Storage.get_task,
list_tasks, list_attempts, queue_stats, next_scheduled_at, next_expiry_at)."""

from __future__ import annotations

from typing import Any

import orjson

from orch8_server.storage import Storage
from orch8_server.storage.base import TaskFilter
from orch8_server.storage.rows import COMPLETED_COLUMNS, TASK_COLUMNS
from storage_contract.support import (
    EVENTS_DUE,
    NOW,
    TENANT,
    Backend,
    insert,
    running,
    status_of,
    task,
)


def test_insert_task_stores_every_column_and_get_task_reads_it_back(store: Backend) -> None:
    row = task(
        params={"a": [1, "x"]}, context={"instance_id": "i1"}, headers={"traceparent": "t"},
        priority=-2, good_until=NOW + 5000, required_labels={"gpu": "a100"},
        checkpoint={"c": 1}, progress={"p": 0.5}, retry={"max_attempts": 5, "backoff": "x"},
    )  # fmt: skip

    async def check(s: Storage) -> None:
        async with s.transaction() as tx:
            stored, created = await tx.insert_task(row)  # type: ignore[arg-type]
        assert created and stored["id"] == row["id"]
        got = await s.get_task(row["id"])
        assert got is not None and set(got) == set(TASK_COLUMNS)
        assert {k: got[k] for k in row} == row  # JSON parsed, instants as integers
        assert isinstance(got["seq"], int)
        assert await s.get_task("t-missing") is None

    store.run(check)


def test_a_row_setting_lease_columns_is_stored_whole_but_never_changes_a_known_keys_task(
    store: Backend,
) -> None:
    """Inserts leave the columns no new task carries (rows.BORN_NULL) to an UPDATE; a row
    whose key is already stored must not reach the stored task through it."""
    first = task(idempotency_key="kb")
    again = running("l9", idempotency_key="kb", output={"x": 1})
    alone = running("l8", checkpoint={"step": 2})

    async def check(s: Storage) -> None:
        await insert(s, first)
        async with s.transaction() as tx:
            existing, created = await tx.insert_task(again)  # type: ignore[arg-type]
            assert not created and existing["id"] == first["id"]
            assert (await tx.insert_task(alone))[1]  # type: ignore[arg-type]
        kept = await s.get_task(first["id"])
        assert kept is not None and kept["status"] == "pending", kept
        assert (kept["worker_id"], kept["lease_id"], kept["output"]) == (None, None, None)
        assert await s.get_task(again["id"]) is None
        got = await s.get_task(alone["id"])
        assert got is not None and {k: got[k] for k in alone} == alone

    store.run(check)


def test_a_known_idempotency_key_returns_the_stored_task_of_the_same_tenant(store: Backend) -> None:
    """P-TASK-3, P-TEN-3: also for a key inserted earlier in the same transaction."""
    first, again = task(idempotency_key="k", params={"v": 1}), task(idempotency_key="k")
    other_tenant = task(idempotency_key="k", tenant="t2")
    same_tx = [task(), task(idempotency_key="k2"), task(idempotency_key="k2")]

    async def check(s: Storage) -> None:
        await insert(s, first)
        async with s.transaction() as tx:
            existing, created = await tx.insert_task(again)  # type: ignore[arg-type]
            assert not created and existing["id"] == first["id"]
            assert existing["params"] == {"v": 1}
            assert (await tx.insert_task(other_tenant))[1]  # type: ignore[arg-type]
        async with s.transaction() as tx:
            results = [await tx.insert_task(r) for r in same_tx]  # type: ignore[arg-type]
        assert [created for _, created in results] == [True, True, False]
        assert results[2][0]["id"] == same_tx[1]["id"]
        assert await s.get_task(again["id"]) is None
        assert await s.get_task(same_tx[2]["id"]) is None

    store.run(check)


def test_a_new_key_is_stored_with_its_row_and_found_by_the_next_keyed_insert(
    store: Backend,
) -> None:
    """`new_key` (a new instance's step, P-WF-4): the row is stored with its key, so a
    later insert with that key returns it (P-TASK-3), in the same transaction and after."""
    first, same_tx, later = (task(idempotency_key="wf:k", params={"n": n}) for n in (1, 2, 3))

    async def check(s: Storage) -> None:
        async with s.transaction() as tx:
            assert (await tx.insert_task(first, new_key=True))[1]  # type: ignore[arg-type]
            existing, created = await tx.insert_task(same_tx)  # type: ignore[arg-type]
            assert not created and existing["id"] == first["id"]
        async with s.transaction() as tx:
            existing, created = await tx.insert_task(later)  # type: ignore[arg-type]
            assert not created and existing["params"] == {"n": 1}
        stored = await s.get_task(first["id"])
        assert stored is not None and stored["idempotency_key"] == "wf:k"
        assert await s.get_task(same_tx["id"]) is None

    store.run(check)


def test_a_transactions_writes_keep_their_order_and_its_reads_see_them(store: Backend) -> None:
    """Writes may be buffered until the next read or the commit: never reordered."""
    rows = [task() for _ in range(5)]

    async def check(s: Storage) -> None:
        async with s.transaction() as tx:
            for r in rows:
                await tx.insert_task(r)  # type: ignore[arg-type]
            await tx.update_task(rows[0]["id"], {"priority": 7, "progress": {"p": 1}})
            await tx.update_task(rows[0]["id"], {"status": "cancelled"})  # another shape
            ids = [r["id"] for r in rows]
            got = await tx.tasks_by_ids([*ids, "t-missing", ids[1]])
            assert [g["id"] for g in got] == ids  # in the order asked, each once
            first = await tx.get_task(ids[0])
            assert first is not None and (first["status"], first["priority"]) == ("cancelled", 7)
            first["priority"] = 99  # a copy: the transaction's own view is unchanged
            again = await tx.get_task(ids[0])
            assert again is not None and again["priority"] == 7
            assert await tx.get_task("t-missing") is None
        stored = await s.get_task(ids[0])
        assert stored is not None
        assert (stored["priority"], stored["progress"], stored["status"]) == (
            7,
            {"p": 1},
            "cancelled",
        )

    store.run(check)


def test_a_transaction_that_raises_stores_nothing(store: Backend) -> None:
    class Boom(Exception):
        pass

    kept, dropped = task(), task()

    async def check(s: Storage) -> None:
        await insert(s, kept)
        try:
            async with s.transaction() as tx:
                await tx.insert_task(dropped)  # type: ignore[arg-type]
                await tx.update_task(kept["id"], {"priority": 9})
                assert await tx.get_task(dropped["id"]) is not None
                raise Boom
        except Boom:
            pass
        assert await s.get_task(dropped["id"]) is None
        stored = await s.get_task(kept["id"])
        assert stored is not None and stored["priority"] == 0

    store.run(check)


def _attempt(
    lease: str, n: int, started: int, ended: int, outcome: str, **kw: Any
) -> dict[str, Any]:
    return {"task_id": "t-a", "lease_id": lease, "attempt": n, "worker_id": "w",
            "started_at": started, "ended_at": ended, "outcome": outcome, "error": None,
            "reply": None, **kw}  # fmt: skip


def test_attempts_are_one_per_lease_and_read_back_in_order(store: Backend) -> None:
    failed = _attempt("l1", 1, NOW, NOW + 10, "failed", error={"code": "boom", "message": "m"})
    replaced = _attempt("l2", 2, NOW + 20, NOW + 30, "lease_expired")
    final = _attempt("l2", 2, NOW + 20, NOW + 40, "completed", reply={"status": "completed"})

    async def check(s: Storage) -> None:
        await insert(s, task(id="t-a"))
        async with s.transaction() as tx:
            for a in (failed, replaced, final):  # the same lease again replaces it
                await tx.insert_attempt(a)  # type: ignore[arg-type]
        async with s.transaction() as tx:
            assert await tx.get_attempt("t-a", "l2") == final
            assert await tx.get_attempt("t-a", "l9") is None
            assert await tx.latest_attempt("t-a") == final
            assert await tx.latest_attempt("t-missing") is None
        assert await s.list_attempts("t-a") == [failed, final]
        assert await s.list_attempts("t-missing") == []

    store.run(check)


def test_complete_running_completes_only_tasks_running_under_their_lease(store: Backend) -> None:
    """P-DONE-1: one statement, which stores no attempt row."""
    step = running("la", context={"instance_id": "i1", "step_id": "s1"}, headers={"k": "v"})
    plain = running("lp")
    wrong_lease, pending, other_tenant = running("lb"), task(), running("ld", tenant="t2")

    async def check(s: Storage) -> None:
        await insert(s, step, plain, wrong_lease, pending, other_tenant)
        items = [(step["id"], "la", {"out": 1}), (plain["id"], "lp", None),
                 (wrong_lease["id"], "lx", None), (pending["id"], "lc", None),
                 (other_tenant["id"], "ld", None), ("t-missing", "x", None)]  # fmt: skip
        async with s.transaction() as tx:
            done = await tx.complete_running(TENANT, items, NOW + 5)
            assert await tx.complete_running(TENANT, [], NOW + 5) == []
        by_id = {r["id"]: r for r in done}
        assert sorted(by_id) == sorted([step["id"], plain["id"]])
        row = by_id[step["id"]]
        assert set(row) == {*COMPLETED_COLUMNS, "instance_id"}
        headers = row["headers"]  # parsed on PostgreSQL, the stored text on SQLite
        assert (orjson.loads(headers) if isinstance(headers, str) else headers) == {"k": "v"}
        assert {k: row[k] for k in COMPLETED_COLUMNS if k != "headers"} == {
            "id": step["id"], "status": "completed", "lease_id": "la", "attempt": 1,
            "max_attempts": 3, "worker_id": "w", "lease_started_at": NOW, "queue_name": "q",
            "handler_name": "h", "run_at": NOW, "tenant": TENANT, "concurrency_key": None,
        }  # fmt: skip
        assert (row["instance_id"], by_id[plain["id"]]["instance_id"]) == ("i1", None)
        stored = await s.get_task(step["id"])
        assert stored is not None
        assert (stored["status"], stored["output"], stored["finished_at"], stored["updated_at"]) == (
            "completed", {"out": 1}, NOW + 5, NOW + 5,
        )  # fmt: skip
        # The completed row is its attempt's record (transitions.completed_attempt)
        assert await s.list_attempts(step["id"]) == []
        for untouched, status in (
            (wrong_lease, "running"),
            (pending, "pending"),
            (other_tenant, "running"),
        ):
            assert await status_of(s, untouched["id"]) == status
            assert await s.list_attempts(untouched["id"]) == []

    store.run(check)


def test_a_completed_step_commits_with_its_transaction_or_not_at_all(store: Backend) -> None:
    """P-WF-5: a step's completion commits with the transaction that advances its
    instance, so a transaction that fails after complete_running leaves the step running
    (a backend may commit the completion of a task that is no step by itself, first)."""
    step = running("la", context={"instance_id": "i1", "step_id": "s1"})
    plain = running("lp")

    class Boom(Exception):
        pass

    async def check(s: Storage) -> None:
        await insert(s, step, plain)
        items = [(step["id"], "la", 1), (plain["id"], "lp", 2)]
        try:
            async with s.transaction() as tx:
                done = await tx.complete_running(TENANT, items, NOW + 5)
                assert sorted(r["id"] for r in done) == sorted([step["id"], plain["id"]])
                raise Boom  # e.g. the advance failed
        except Boom:
            pass
        assert await status_of(s, step["id"]) == "running"
        assert await status_of(s, plain["id"]) in ("running", "completed")

    store.run(check)


def test_promote_due_makes_due_scheduled_tasks_of_every_tenant_pending(store: Backend) -> None:
    due = [task("h1", status="scheduled", run_at=NOW), task("h1", status="scheduled", run_at=NOW - 5),
           task("h2", "q2", status="scheduled", run_at=NOW, tenant="t2")]  # fmt: skip
    later = task(status="scheduled", run_at=NOW + 1)

    async def check(s: Storage) -> None:
        await insert(s, *due, later)
        async with s.transaction() as tx:
            triples = await tx.promote_due(NOW)
        assert triples == [(TENANT, "q", "h1"), ("t2", "q2", "h2")]  # each once, sorted
        for row in due:
            stored = await s.get_task(row["id"])
            assert stored is not None and (stored["status"], stored["updated_at"]) == (
                "pending",
                NOW,
            )
        assert await status_of(s, later["id"]) == "scheduled"
        async with s.transaction() as tx:
            assert await tx.promote_due(NOW) == []

    store.run(check)


def test_expire_overdue_expires_unstarted_tasks_past_good_until(store: Backend) -> None:
    """P-EXPIRE-1; a step task's expiry records its instance event (P-WF-5)."""
    overdue = [task(good_until=NOW), task(status="scheduled", run_at=NOW + 9, good_until=NOW - 1)]
    step = task(good_until=NOW, context={"instance_id": "i1", "step_id": "s1"})
    kept = [task(good_until=NOW + 1), running("l", good_until=NOW - 1), task()]

    async def check(s: Storage) -> None:
        await insert(s, *overdue, step, *kept)
        async with s.transaction() as tx:
            assert await tx.expire_overdue(NOW) == 3
        for row in (*overdue, step):
            stored = await s.get_task(row["id"])
            assert stored is not None
            assert (stored["status"], stored["finished_at"]) == ("expired", NOW)
        assert [await status_of(s, r["id"]) for r in kept] == ["pending", "running", "pending"]
        async with s.transaction() as tx:
            events = await tx.workflows.take_due_events(EVENTS_DUE, 10)
        assert [(e["instance_id"], e["task_id"]) for e in events] == [("i1", step["id"])]

    store.run(check)


def test_expired_leases_are_the_running_tasks_whose_lease_ended(store: Backend) -> None:
    """P-LEASE-6: earliest first, every tenant, up to the limit."""
    first = running("la", lease_expires_at=NOW - 10, tenant="t2")
    second = running("lb", lease_expires_at=NOW)
    alive = running("lc", lease_expires_at=NOW + 1)

    async def check(s: Storage) -> None:
        await insert(s, second, alive, first, task())
        async with s.transaction() as tx:
            rows = await tx.expired_leases(NOW, 10)
            assert [r["id"] for r in rows] == [first["id"], second["id"]]
            assert set(rows[0]) == set(TASK_COLUMNS)
            assert [r["id"] for r in await tx.expired_leases(NOW, 1)] == [first["id"]]

    store.run(check)


def test_running_tasks_of_a_worker_are_its_tenants_running_tasks(store: Backend) -> None:
    mine = [running("l1", worker="w1"), running("l2", worker="w1")]
    others = [running("l3", worker="w1", tenant="t2"), running("l4", worker="w2"),
              task(worker_id="w1", attempt=1, status="scheduled")]  # fmt: skip

    async def check(s: Storage) -> None:
        await insert(s, *mine, *others)
        async with s.transaction() as tx:
            rows = await tx.running_tasks_of(TENANT, "w1")
            assert sorted(r["id"] for r in rows) == sorted(r["id"] for r in mine)
            assert await tx.running_tasks_of(TENANT, "w9") == []

    store.run(check)


def test_list_tasks_filters_newest_first_within_one_tenant(store: Backend) -> None:
    a = task("h1", "q1", created_at=NOW)
    b = running("l", handler_name="h2", queue_name="q1", created_at=NOW + 1)
    c = task("h1", "q2", status="completed", created_at=NOW + 2, context={"instance_id": "i9"})
    d = task("h1", "q1", tenant="t2")

    async def check(s: Storage) -> None:
        for row in (a, b, c, d):  # one at a time: seq follows this order
            await insert(s, row)

        async def ids(limit: int = 10, before: int | None = None, **flt: Any) -> list[str]:
            return [r["id"] for r in await s.list_tasks(TaskFilter(**flt), limit, before)]

        ab, abc = [b["id"], a["id"]], [c["id"], b["id"], a["id"]]
        assert await ids() == abc
        assert await ids(statuses=("pending", "running")) == ab
        assert await ids(handler_name="h1") == [c["id"], a["id"]]
        assert await ids(queue_name="q1") == ab
        assert await ids(worker_id="w") == [b["id"]]
        assert await ids(worker_id="w", statuses=("running",)) == [b["id"]]
        assert await ids(worker_id="w", statuses=("completed",)) == []
        assert await ids(created_after=NOW) == [c["id"], b["id"]]
        assert await ids(created_before=NOW + 2) == ab
        assert await ids(instance_id="i9") == [c["id"]]  # P-WF-4
        assert await ids(limit=2) == [c["id"], b["id"]]
        stored_b = await s.get_task(b["id"])
        assert stored_b is not None and await ids(before=stored_b["seq"]) == [a["id"]]
        assert await ids(tenant="t2") == [d["id"]]  # P-TEN-3
        assert await ids(tenant="t3") == []

    store.run(check)


def test_a_page_of_every_status_is_the_newest_rows_of_all_of_them(store: Backend) -> None:
    """A list that names no status merges every stored status newest first, page after
    page, however the statuses interleave (SQLite and PostgreSQL read each status through
    its own index)."""
    statuses = ["pending", "completed", "running", "failed", "scheduled", "completed",
                "held", "cancelled", "expired", "pending", "completed", "running"]  # fmt: skip
    rows = [
        running(f"l{i}") if st == "running" else task(status=st) for i, st in enumerate(statuses)
    ]

    async def check(s: Storage) -> None:
        for row in rows:  # one at a time: seq follows this order
            await insert(s, row)
        newest_first = [r["id"] for r in reversed(rows)]
        seen: list[str] = []
        before = None
        while True:
            page = await s.list_tasks(TaskFilter(), 5, before)
            if not page:
                break
            seen += [r["id"] for r in page]
            before = page[-1]["seq"]
        assert seen == newest_first
        done = await s.list_tasks(TaskFilter(statuses=("completed", "failed")), 3, None)
        assert [r["id"] for r in done] == [rows[i]["id"] for i in (10, 5, 3)]

    store.run(check)


def test_queue_stats_count_unfinished_and_failed_tasks_per_queue_and_handler(
    store: Backend,
) -> None:
    rows = [task("h1", "q1", run_at=NOW), task("h1", "q1", run_at=NOW - 50),
            task("h1", "q1", status="scheduled", run_at=NOW + 9), running("l", "w", handler_name="h1", queue_name="q1"),
            task("h1", "q1", status="failed"), task("h1", "q1", status="completed"),
            task("h2", "q2"), task("h3", "q3", status="completed"), task("h1", "q1", tenant="t2"),
            task("h1", "q1", status="held", run_at=NOW - 60, concurrency_key="k",
                 max_concurrency=1)]  # fmt: skip

    async def check(s: Storage) -> None:
        await insert(s, *rows)
        stats = sorted(await s.queue_stats(TENANT, None), key=lambda r: r["queue_name"])
        assert stats == [
            {"queue_name": "q1", "handler_name": "h1", "pending": 3, "scheduled": 1, "running": 1,
             "failed": 1, "held": 1, "oldest_pending_run_at": NOW - 60},  # held is pending too
            {"queue_name": "q2", "handler_name": "h2", "pending": 1, "scheduled": 0, "running": 0,
             "failed": 0, "held": 0, "oldest_pending_run_at": NOW},
        ]  # fmt: skip
        assert [r["queue_name"] for r in await s.queue_stats(TENANT, "q2")] == ["q2"]
        assert await s.queue_stats("t3", None) == []

    store.run(check)


def test_next_scheduled_at_is_the_earliest_scheduled_run_of_any_tenant(store: Backend) -> None:
    async def check(s: Storage) -> None:
        assert await s.next_scheduled_at() is None
        await insert(s, task(status="scheduled", run_at=NOW + 50), task(run_at=NOW - 9),
                     task(status="scheduled", run_at=NOW + 20, tenant="t2"))  # fmt: skip
        assert await s.next_scheduled_at() == NOW + 20

    store.run(check)


def test_next_expiry_at_is_the_earliest_good_until_of_a_waiting_task(store: Backend) -> None:
    """P-CLOCK-3: the test clock's next timer counts good_until of pending and scheduled
    tasks only (a running or finished task no longer expires)."""

    async def check(s: Storage) -> None:
        assert await s.next_expiry_at() is None
        await insert(s, task(good_until=NOW + 70), running("l1", good_until=NOW + 5),
                     task(status="completed", good_until=NOW + 1),
                     task(status="scheduled", run_at=NOW + 9, good_until=NOW + 40, tenant="t2"))  # fmt: skip
        assert await s.next_expiry_at() == NOW + 40

    store.run(check)
