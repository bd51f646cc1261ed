"""Contract: workers, tenants, queue history and cross-replica state (Tx worker methods;
Storage.get_worker .. list_tenants, pending_counts .. queue_minutes, share_pollers)."""

from __future__ import annotations

from typing import Any

from orch8_server.storage import Storage
from orch8_server.storage.base import wake_key
from orch8_server.storage.rows import WORKER_COLUMNS
from storage_contract.support import NOW, TENANT, Backend, insert, running, task, worker


def test_workers_are_upserted_updated_and_deleted_per_tenant(store: Backend) -> None:
    """P-TEN-1: worker ids are unique per tenant."""
    w = worker("w1", labels={"gpu": "a"}, handlers=["h", "g"], key_id="k1")
    same_id = worker("w1", tenant="t2", hostname="other")

    async def check(s: Storage) -> None:
        async with s.transaction() as tx:
            assert await tx.get_worker(TENANT, "w1") is None
            await tx.upsert_worker(w)  # type: ignore[arg-type]
            await tx.upsert_worker(same_id)  # type: ignore[arg-type]
            assert await tx.get_worker(TENANT, "w1") == w
        got = await s.get_worker(TENANT, "w1")
        assert got == w and set(got) == set(WORKER_COLUMNS)
        async with s.transaction() as tx:
            await tx.upsert_worker({**w, "pid": 7, "queues": ["q2"]})  # type: ignore[typeddict-item]
            await tx.update_worker(
                TENANT, "w1", {"directive": "quiet", "last_heartbeat_at": NOW + 5}
            )
            assert await tx.get_worker(TENANT, "w1") == {
                **w,
                "pid": 7,
                "queues": ["q2"],
                "directive": "quiet",
                "last_heartbeat_at": NOW + 5,
            }
        async with s.transaction() as tx:
            await tx.delete_worker(TENANT, "w1")
        assert await s.get_worker(TENANT, "w1") is None
        assert await s.get_worker("t2", "w1") == same_id

    store.run(check)


def test_workers_are_listed_by_tenant_and_state_most_recently_heard_first(store: Backend) -> None:
    rows = [worker("w1", last_heartbeat_at=NOW), worker("w2", last_heartbeat_at=NOW + 2),
            worker("w3", state="dead", last_heartbeat_at=NOW + 1),
            worker("w4", tenant="t2", last_heartbeat_at=NOW + 3)]  # fmt: skip

    async def check(s: Storage) -> None:
        async with s.transaction() as tx:
            for row in rows:
                await tx.upsert_worker(row)  # type: ignore[arg-type]

        async def ids(tenant: str | None, state: str | None) -> list[str]:
            return [w["worker_id"] for w in await s.list_workers(tenant, state)]

        assert await ids(TENANT, None) == ["w2", "w3", "w1"]
        assert await ids(TENANT, "running") == ["w2", "w1"]
        assert await ids(None, None) == ["w4", "w2", "w3", "w1"]  # every tenant (metrics)
        assert await ids("t3", None) == []

    store.run(check)


def test_silent_workers_are_the_live_workers_not_heard_from_since(store: Backend) -> None:
    """P-WORKER-5's sweep: every tenant; dead and deregistered workers are done."""
    silent = [worker("w1", last_heartbeat_at=NOW - 1), worker("w2", state="quiet", tenant="t2"),
              worker("w3", state="terminating")]  # fmt: skip
    others = [worker("w4", last_heartbeat_at=NOW + 1), worker("w5", state="dead"),
              worker("w6", state="deregistered")]  # fmt: skip

    async def check(s: Storage) -> None:
        async with s.transaction() as tx:
            for row in (*silent, *others):
                await tx.upsert_worker(row)  # type: ignore[arg-type]
        async with s.transaction() as tx:
            found = await tx.silent_workers(NOW + 1)
        assert sorted((w["tenant"], w["worker_id"]) for w in found) == sorted(
            (w["tenant"], w["worker_id"]) for w in silent
        )

    store.run(check)


def test_active_task_counts_count_running_tasks_per_worker(store: Backend) -> None:
    async def check(s: Storage) -> None:
        await insert(s, running("l1", "w1"), running("l2", "w1"), running("l3", "w2"),
                     running("l4", "w1", tenant="t2"), task(worker_id="w3"))  # fmt: skip
        assert await s.active_task_counts(TENANT, ["w1", "w2", "w3"]) == {"w1": 2, "w2": 1}
        assert await s.active_task_counts(TENANT, []) == {}

    store.run(check)


def test_tenants_in_use_are_named_and_counted(store: Backend) -> None:
    """P-TEN-4: a tenant with a task or a worker, sorted."""

    async def check(s: Storage) -> None:
        assert (await s.tenant_names(), await s.list_tenants()) == ([], [])
        await insert(s, task(tenant="b"), task(tenant="b"), task(tenant="a"))
        async with s.transaction() as tx:
            await tx.upsert_worker(worker(tenant="c"))  # type: ignore[arg-type]
            await tx.upsert_worker(worker(tenant="a"))  # type: ignore[arg-type]
        assert await s.tenant_names() == ["a", "b", "c"]
        assert await s.list_tenants() == [
            {"tenant": "a", "tasks": 1, "workers": 1},
            {"tenant": "b", "tasks": 2, "workers": 0},
            {"tenant": "c", "tasks": 0, "workers": 1},
        ]

    store.run(check)


def test_pending_counts_and_bounded_queue_depth(store: Backend) -> None:
    """P-OBS-5's depth sample; P-BP-2: pending + scheduled, each counted up to the limit."""

    async def check(s: Storage) -> None:
        assert await s.pending_counts() == {}
        await insert(s, *(task() for _ in range(3)), *(task(status="scheduled") for _ in range(2)),
                     running("l"), task(status="completed"), task(queue="q2"),
                     task(tenant="t2"))  # fmt: skip
        assert await s.pending_counts() == {(TENANT, "q"): 3, (TENANT, "q2"): 1, ("t2", "q"): 1}
        assert await s.queue_depth(TENANT, "q", 100) == 5
        assert await s.queue_depth(TENANT, "q", 2) == 4
        assert await s.queue_depth("t3", "q", 100) == 0

    store.run(check)


def test_queue_minutes_add_up_merge_waits_and_prune(store: Backend) -> None:
    """P-OBS-5: every replica adds its counts; depth is the latest sample."""
    m = 29_000_000  # an epoch minute

    def counts(minute: int, enq: int, done: int, failed: int, waits: Any) -> dict[str, Any]:
        return {"tenant": TENANT, "queue_name": "q", "minute": minute, "enqueued": enq,
                "completed": done, "failed": failed, "wait_hist": waits}  # fmt: skip

    async def check(s: Storage) -> None:
        await s.add_queue_minutes([counts(m - 70, 9, 9, 9, None)], m - 70, {}, m - 200)  # type: ignore[list-item]
        assert len(await s.queue_minutes(TENANT, "q", m - 100)) == 1
        depth = {(TENANT, "q"): 7}
        await s.add_queue_minutes([counts(m, 2, 1, 0, {"3": 1, "10": 2})], m, depth, m - 61)  # type: ignore[list-item]
        await s.add_queue_minutes(
            [counts(m, 3, 0, 1, {"10": 1, "20": 4})], m, {(TENANT, "q"): 4}, m - 61
        )  # type: ignore[list-item]
        await s.add_queue_minutes([counts(m, 1, 0, 0, None)], m, {}, m - 61)  # type: ignore[list-item]
        assert await s.queue_minutes(TENANT, "q", m - 100) == [  # the old minute was pruned
            {"minute": m, "enqueued": 6, "completed": 1, "failed": 1, "depth": 4,
             "wait_hist": {"3": 1, "10": 3, "20": 4}}  # bucket by bucket
        ]  # fmt: skip
        assert await s.queue_minutes(TENANT, "other", m - 100) == []
        assert await s.queue_minutes("t2", "q", m - 100) == []  # P-TEN-3

    store.run(check)


def test_pollers_are_shared_by_multi_replica_backends_only(store: Backend) -> None:
    """P-OBS-1: each replica records what its pollers asked for and reads everyone's."""
    key = wake_key(TENANT, "q")

    async def check(s: Storage) -> None:
        seen = [(key, "h", "p1", NOW), (key, "h", "p2", NOW - 10)]
        shared = await s.share_pollers(seen, NOW - 5)
        if not s.multi_replica:  # one process: its in-memory registry is the whole truth
            assert shared == []
            return
        assert shared == [(key, "h", "p1", NOW)]  # p2 was seen before `since`: dropped
        assert sorted(await s.share_pollers([(key, "h", "p1", NOW - 1)], NOW - 5)) == [
            (key, "h", "p1", NOW)  # the latest sighting stays
        ]

    store.run(check)


def test_ping_and_announce_answer_on_an_open_storage(store: Backend) -> None:
    async def check(s: Storage) -> None:
        await s.ping()
        await s.announce(wake_key(TENANT, "q"), "h")

    store.run(check)
