"""Contract: concurrency keys (Tx.admit, Tx.stranded_keys, Tx.touched, Storage.key_slots;
P-KEY-1..4, P-KEY-6). A keyed task is stored `held` until admission gives it a slot."""

from __future__ import annotations

from orch8_server.storage import Storage
from storage_contract.support import NOW, TENANT, Backend, claim, insert, running, status_of, task

K = (TENANT, "customer-1")


def held(**fields: object) -> dict[str, object]:
    return task(**{"status": "held", "concurrency_key": K[1], "max_concurrency": 1, **fields})


def test_admit_fills_free_slots_in_claim_order_and_no_more_P_KEY_3(store: Backend) -> None:
    a, b, c = held(priority=5), held(), held()  # b, c come before a: lower priority first
    other = task(status="held", concurrency_key="other", max_concurrency=1)

    async def check(s: Storage) -> None:
        await insert(s, a, b, c, other)
        async with s.transaction() as tx:
            admitted = await tx.admit({K}, NOW)
        assert admitted == [(TENANT, "q", "h")]
        assert [await status_of(s, t["id"]) for t in (a, b, c)] == ["held", "pending", "held"]
        assert await status_of(s, other["id"]) == "held"  # another key: untouched
        assert await s.key_slots(*K) == 1
        async with s.transaction() as tx:  # the slot is taken: nothing to admit
            assert await tx.admit({K}, NOW) == []
        claimed, _ = await s.claim(claim())  # P-KEY-2: held rows are not claimable
        assert [r["id"] for r in claimed] == [b["id"]]
        assert await s.key_slots(*K) == 1  # running holds the slot too

    store.run(check)


def test_each_task_counts_its_own_limit_against_holders_and_those_ahead_P_KEY_4(
    store: Backend,
) -> None:
    holder = running("l0", concurrency_key=K[1], max_concurrency=3)
    first, second, third = (held(max_concurrency=3) for _ in range(3))

    async def check(s: Storage) -> None:
        await insert(s, holder, first, second, third)
        async with s.transaction() as tx:
            assert len(await tx.admit({K}, NOW)) == 2  # 1 holder + 2 admitted = 3
        assert [await status_of(s, t["id"]) for t in (first, second, third)] == [
            "pending", "pending", "held"
        ]  # fmt: skip

    store.run(check)


def test_promotion_and_expiry_of_keyed_tasks_touch_their_key_P_KEY_3(store: Backend) -> None:
    due = task(status="scheduled", run_at=NOW, concurrency_key=K[1], max_concurrency=1)
    late = task(status="scheduled", run_at=NOW + 60_000, concurrency_key="k2", max_concurrency=1)
    plain = task(status="scheduled", run_at=NOW)
    stale = held(good_until=NOW)  # P-KEY-6: a held task still expires

    async def check(s: Storage) -> None:
        await insert(s, due, late, plain, stale)
        async with s.transaction() as tx:
            woken = await tx.promote_due(NOW)
            assert woken == [(TENANT, "q", "h")]  # the plain task only: keyed ones wait
            assert await tx.expire_overdue(NOW) == 1
            assert tx.touched == {K}
            assert await tx.admit(set(), NOW) == [(TENANT, "q", "h")]  # from touched
        assert await status_of(s, due["id"]) == "pending"
        assert await status_of(s, stale["id"]) == "expired"
        assert await status_of(s, late["id"]) == "scheduled"  # not due: no slot (P-KEY-3)

    store.run(check)


def test_stranded_keys_are_those_with_held_tasks_and_no_holder_P_KEY_3(store: Backend) -> None:
    lonely = held()
    busy = task(status="held", concurrency_key="busy", max_concurrency=1)
    busy_holder = running("l9", concurrency_key="busy", max_concurrency=1)

    async def check(s: Storage) -> None:
        await insert(s, lonely, busy, busy_holder)
        async with s.transaction() as tx:
            assert await tx.stranded_keys(10) == [K]
            assert await tx.admit(set(await tx.stranded_keys(10)), NOW) == [(TENANT, "q", "h")]
        async with s.transaction() as tx:
            assert await tx.stranded_keys(10) == []

    store.run(check)
