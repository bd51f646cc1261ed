"""Contract: claims (Tx.claim, Storage.claim), queue and handler controls, label routing."""

from __future__ import annotations

import orjson
import pytest

from orch8_server.storage import Storage
from orch8_server.storage.rows import CLAIM_COLUMNS
from storage_contract.support import (
    EVENTS_DUE,
    NOW,
    TENANT,
    Backend,
    claim,
    insert,
    running,
    status_of,
    task,
    worker,
)


def test_a_claim_leases_pending_tasks_by_priority_then_fifo(store: Backend) -> None:
    """P-ORDER-1: lower priority first, then the order of insertion."""
    early, late, urgent = task(priority=0), task(priority=0), task(priority=-5)
    skipped = [task(status="scheduled"), running("lx"), task(queue="other"), task(tenant="t2")]
    again = task(attempt=1, started_at=NOW - 100, run_at=NOW - 10)  # a retry keeps started_at

    async def check(s: Storage) -> None:
        for row in (early, late, urgent, *skipped, again):
            await insert(s, row)
        rows, expired = await s.claim(claim(limit=2))
        assert expired == 0
        assert [r["id"] for r in rows] == [urgent["id"], early["id"]]
        assert [r["id"] for r in (await s.claim(claim(limit=1)))[0]] == [late["id"]]
        lease = {"status": "running", "lease_id": "l1", "worker_id": "w", "attempt": 1,
                 "lease_started_at": NOW + 1, "lease_ms": 500, "lease_expires_at": NOW + 501,
                 "started_at": NOW + 1}  # fmt: skip
        assert {k: rows[0][k] for k in lease} == lease
        assert {*CLAIM_COLUMNS, *lease} <= set(rows[0])
        stored = await s.get_task(urgent["id"])
        assert stored is not None and {k: stored[k] for k in lease} == lease
        (retried,), _ = await s.claim(claim())
        assert (retried["id"], retried["attempt"], retried["started_at"]) == (
            again["id"],
            2,
            NOW - 100,
        )
        assert await s.claim(claim()) == ([], 0)
        assert [await status_of(s, r["id"]) for r in skipped] == [
            "scheduled",
            "running",
            "pending",
            "pending",
        ]

    store.run(check)


def test_a_claim_by_handler_names_merges_their_queues_in_claim_order(store: Backend) -> None:
    a1, b1, a2, c1 = task("a", priority=1), task("b", priority=1), task("a", priority=0), task("c")

    async def check(s: Storage) -> None:
        for row in (a1, b1, a2, c1):
            await insert(s, row)
        rows, _ = await s.claim(claim(handlers=["a", "b"], limit=2))
        assert [r["id"] for r in rows] == [a2["id"], a1["id"]]
        rows, _ = await s.claim(claim(handlers=["b", "a"], limit=5))
        assert [r["id"] for r in rows] == [b1["id"]]
        rows, _ = await s.claim(claim(handlers=[], limit=5))  # empty: every handler
        assert [r["id"] for r in rows] == [c1["id"]]

    store.run(check)


def test_a_claim_without_handler_names_merges_every_handler_in_claim_order(
    store: Backend,
) -> None:
    """P-ORDER-1 across the handlers of a queue, capped (P-CTRL-2) or not."""
    a1, b1, c1 = task("a", priority=1), task("b", priority=0), task("c", priority=1)
    a2, b2, elsewhere = task("a", priority=0), task("b", priority=2), task("a", queue="other")
    x_ran, x1, y1 = (
        running("lx", handler_name="x", queue_name="cq"),
        task("x", "cq"),
        task("y", "cq"),
    )

    async def check(s: Storage) -> None:
        await insert(s, a1, b1, c1, a2, b2, elsewhere, x_ran, x1, y1)
        rows, _ = await s.claim(claim(limit=3))
        assert [r["id"] for r in rows] == [b1["id"], a2["id"], a1["id"]]
        rows, _ = await s.claim(claim(limit=5))
        assert [r["id"] for r in rows] == [c1["id"], b2["id"]]
        assert await status_of(s, elsewhere["id"]) == "pending"
        await s.set_handler_control(TENANT, "x", 1, NOW)  # x is at its cap: y's task only
        rows, _ = await s.claim(claim("cq", limit=5, capped=True))
        assert [r["id"] for r in rows] == [y1["id"]]

    store.run(check)


@pytest.mark.parametrize("capped", [False, True])
def test_a_claim_expires_the_stale_tasks_it_meets_and_still_fills_its_limit(
    store: Backend, capped: bool
) -> None:
    """P-EXPIRE-1: never delivered, even when the claim races the deadline; a step task's
    expiry records its instance event (P-WF-5). Plain and capped (P-CTRL-2) claims."""
    stale = [
        task(good_until=NOW + 1),
        task(good_until=NOW, context={"instance_id": "i1", "step_id": "s"}),
    ]
    fresh = [task(good_until=NOW + 2), task()]

    async def check(s: Storage) -> None:
        for row in (*stale, *fresh):
            await insert(s, row)
        if capped:
            await s.set_queue_control(TENANT, "q", {"max_running": 10}, NOW)
        rows, expired = await s.claim(claim(limit=2, capped=capped))
        assert expired == 2 and [r["id"] for r in rows] == [r["id"] for r in fresh]
        for row in stale:
            stored = await s.get_task(row["id"])
            assert stored is not None and (stored["status"], stored["finished_at"]) == (
                "expired",
                NOW + 1,
            )
        async with s.transaction() as tx:
            events = await tx.workflows.take_due_events(EVENTS_DUE, 10)
        assert [(e["instance_id"], e["task_id"]) for e in events] == [("i1", stale[1]["id"])]

    store.run(check)


def test_a_claim_in_a_transaction_splices_the_stored_json(store: Backend) -> None:
    """Claimed JSON columns are the stored text as orjson.Fragments, never parsed (P-LEASE-8)."""
    row = task(
        params={"n": [1, 2]}, context={"c": "x"}, headers={"traceparent": "t"}, checkpoint=None
    )

    async def check(s: Storage) -> None:
        await insert(s, row)
        async with s.transaction() as tx:
            (claimed,), expired = await tx.claim(claim())
        assert expired == 0 and (claimed["status"], claimed["attempt"]) == ("running", 1)
        assert all(
            isinstance(claimed[c], orjson.Fragment) for c in ("params", "context", "headers")
        )
        spliced = orjson.loads(
            orjson.dumps({c: claimed[c] for c in ("params", "context", "headers", "checkpoint")})
        )
        assert spliced == {"params": {"n": [1, 2]}, "context": {"c": "x"},
                           "headers": {"traceparent": "t"}, "checkpoint": None}  # fmt: skip
        assert orjson.loads(claimed["headers_json"]) == {"traceparent": "t"}  # P-TEL-2
        assert await status_of(s, row["id"]) == "running"

    store.run(check)


def test_labelled_tasks_go_to_claimers_holding_their_labels_without_blocking_the_rest(
    store: Backend,
) -> None:
    """P-LABEL-1, P-LABEL-2."""
    gpu = task(priority=-1, required_labels={"gpu": "a"})
    plain = task()

    async def check(s: Storage) -> None:
        await insert(s, gpu, plain)
        rows, _ = await s.claim(claim(labels={"gpu": "b"}))
        assert [r["id"] for r in rows] == [plain["id"]]  # not held: skipped, not blocking
        assert await s.claim(claim()) == ([], 0)  # no labels: unlabelled tasks only
        rows, _ = await s.claim(claim(labels={"gpu": "a", "zone": "x"}))
        assert [r["id"] for r in rows] == [gpu["id"]]

    store.run(check)


def test_capped_claims_respect_paused_queues_and_running_caps(store: Backend) -> None:
    """P-CTRL-1, P-CTRL-2: at most cap - running, read from the stored controls."""

    async def check(s: Storage) -> None:
        await insert(
            s, *(task(queue=q, handler=h) for q, h in [("pq", "h"), ("cq", "h"), ("q", "ch")] * 3)
        )
        await insert(s, running("lr", queue_name="cq"))  # one already running counts
        await s.set_queue_control(TENANT, "pq", {"paused": True, "paused_at": NOW}, NOW)
        await s.set_queue_control(TENANT, "cq", {"max_running": 3}, NOW)
        await s.set_handler_control(TENANT, "ch", 1, NOW)
        assert await s.claim(claim("pq", capped=True)) == ([], 0)
        assert len((await s.claim(claim("cq", capped=True)))[0]) == 2
        assert await s.claim(claim("cq", capped=True)) == ([], 0)
        assert len((await s.claim(claim("q", ["ch"], capped=True)))[0]) == 1
        assert await s.claim(claim("q", capped=True)) == ([], 0)
        await s.set_queue_control(TENANT, "pq", {"paused": False}, NOW)
        assert len((await s.claim(claim("pq", capped=True)))[0]) == 3
        await s.set_queue_control("t2", "q", {"paused": True}, NOW)  # P-TEN-3: not ours
        await s.set_handler_control(TENANT, "ch", None, NOW)
        assert len((await s.claim(claim("q", capped=True)))[0]) == 2

    store.run(check)


def test_controls_are_upserted_per_tenant_and_listed(store: Backend) -> None:
    async def check(s: Storage) -> None:
        assert await s.controls() == ([], [])
        paused = await s.set_queue_control(TENANT, "q", {"paused": True, "paused_at": NOW}, NOW)
        assert paused == {"queue_name": "q", "paused": True, "paused_at": NOW, "max_running": None,
                          "updated_at": NOW, "tenant": TENANT}  # fmt: skip
        capped = await s.set_queue_control(TENANT, "q", {"max_running": 4}, NOW + 1)  # keeps paused
        assert (capped["paused"], capped["max_running"], capped["updated_at"]) == (True, 4, NOW + 1)
        await s.set_queue_control("t2", "q", {"paused": False, "paused_at": None}, NOW)
        handler = await s.set_handler_control(TENANT, "h", 2, NOW)
        assert handler == {
            "handler_name": "h",
            "max_running": 2,
            "updated_at": NOW,
            "tenant": TENANT,
        }
        cleared = await s.set_handler_control(TENANT, "h", None, NOW + 2)
        assert (cleared["max_running"], cleared["updated_at"]) == (None, NOW + 2)
        queues, handlers = await s.controls()
        assert [(q["tenant"], q["queue_name"], q["paused"], q["max_running"]) for q in queues] == [
            (TENANT, "q", True, 4),
            ("t2", "q", False, None),
        ]
        assert handlers == [cleared]

    store.run(check)


def test_running_counts_group_running_tasks_of_every_tenant(store: Backend) -> None:
    async def check(s: Storage) -> None:
        assert await s.running_counts() == []
        await insert(s, running("l1"), running("l2"), running("l3", handler_name="h2"),
                     running("l4", tenant="t2"), task())  # fmt: skip
        assert sorted(await s.running_counts()) == [
            (TENANT, "q", "h", 2),
            (TENANT, "q", "h2", 1),
            ("t2", "q", "h", 1),
        ]

    store.run(check)


def test_label_routing_reads_pending_label_sets_and_live_worker_labels(store: Backend) -> None:
    """P-LABEL-3, per tenant (P-TEN-3)."""

    async def check(s: Storage) -> None:
        await insert(s, task(required_labels={"gpu": "a"}), task(required_labels={"gpu": "a"}),
                     task("h2", "q2", required_labels={"zone": "x"}), task(),
                     running("l", required_labels={"gpu": "a"}),
                     task(required_labels={"gpu": "a"}, tenant="t2"))  # fmt: skip
        assert sorted(await s.pending_label_sets(TENANT, None), key=str) == [
            ("q", "h", {"gpu": "a"}, 2),
            ("q2", "h2", {"zone": "x"}, 1),
        ]
        assert await s.pending_label_sets(TENANT, "q2") == [("q2", "h2", {"zone": "x"}, 1)]
        async with s.transaction() as tx:
            for w in (worker("w1", labels={"gpu": "a"}), worker("w2", state="dead", labels={"gpu": "b"}),
                      worker("w3", labels={"zone": "x"}, tenant="t2"), worker("w4")):  # fmt: skip
                await tx.upsert_worker(w)  # type: ignore[arg-type]
        assert sorted(await s.live_worker_labels(TENANT), key=len) == [{}, {"gpu": "a"}]

    store.run(check)
