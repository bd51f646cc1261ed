"""Contract: the workflow store of a transaction (Tx.workflows, P-WF-1..10)."""

from __future__ import annotations

from typing import Any

from orch8_server.storage import Storage
from storage_contract.support import EVENTS_DUE, NOW, TENANT, Backend, insert, running, task


def _sequence(name: str, version: int, tenant: str = TENANT) -> dict[str, Any]:
    return {"tenant": tenant, "name": name, "version": version, "created_at": NOW + version,
            "definition": {"steps": [{"id": f"s{version}"}], "on_error": None}}  # fmt: skip


def _instance(instance_id: str, **fields: Any) -> dict[str, Any]:
    row = {"id": instance_id, "tenant": TENANT, "sequence": "seq", "version": 1,
           "status": "running", "input": {"x": [1]}, "output": None, "error": None,
           "state": {"run": 1, "steps": {}}, "idempotency_key": None, "created_at": NOW,
           "updated_at": NOW, "finished_at": None, "concurrency_key": None,
           "max_concurrency": None}  # fmt: skip
    row.update(fields)
    return row


def test_an_instance_keys_slots_and_held_instances_are_counted_per_tenant(
    store: Backend,
) -> None:
    """P-KEY-7: running instances of a key hold slots; held ones are listed in start
    order, and only those started before a given seq count as ahead."""
    keyed = {"concurrency_key": "acct", "max_concurrency": 2}
    rows = [_instance("r1", **keyed), _instance("h1", status="held", **keyed),
            _instance("h2", status="held", **keyed), _instance("d1", status="completed", **keyed),
            _instance("o1", status="held", concurrency_key="other", max_concurrency=1),
            _instance("t1", tenant="t2", **keyed)]  # fmt: skip

    async def check(s: Storage) -> None:
        async with s.transaction() as tx:
            seqs = {}
            for row in rows:
                stored, _ = await tx.workflows.insert_instance(row)  # type: ignore[arg-type]
                seqs[row["id"]] = stored["seq"]
        async with s.transaction() as tx:
            store_ = tx.workflows
            await store_.lock_instance_key(TENANT, "acct")
            assert await store_.instance_slots(TENANT, "acct", 2**62) == (1, 2)
            assert await store_.instance_slots(TENANT, "acct", seqs["h2"]) == (1, 1)
            assert await store_.instance_slots("t2", "acct", 2**62) == (1, 0)
            held = await store_.held_instances(TENANT, "acct", 10)
            assert [r["id"] for r in held] == ["h1", "h2"]
            assert held[0]["max_concurrency"] == 2
            assert [r["id"] for r in await store_.held_instances(TENANT, "acct", 1)] == ["h1"]

    store.run(check)


def test_added_instances_are_stored_in_order_and_seen_by_the_next_read(store: Backend) -> None:
    """P-WF-14: `add_instance` (no idempotency key) may be buffered, so a batch start
    stores its instances in one statement; a read in the same transaction sees them, in
    the order added (seq), with every column as given."""
    keyed = {"concurrency_key": "acct", "max_concurrency": 3}
    rows = [_instance(f"a{i}", input={"i": i}, **keyed) for i in range(3)]

    async def check(s: Storage) -> None:
        async with s.transaction() as tx:
            for row in rows:
                await tx.workflows.add_instance(row)  # type: ignore[arg-type]
            assert await tx.workflows.instance_slots(TENANT, "acct", 2**62) == (3, 0)
            read = await tx.workflows.instance("a1")
            assert read is not None and {k: read[k] for k in rows[1]} == rows[1]
        async with s.transaction() as tx:
            got = await tx.workflows.instances(["a0", "a1", "a2"])
        assert [got[f"a{i}"]["input"] for i in range(3)] == [{"i": 0}, {"i": 1}, {"i": 2}]
        assert got["a0"]["seq"] < got["a1"]["seq"] < got["a2"]["seq"]

    store.run(check)


def test_sequences_are_versioned_per_tenant_and_listed_at_their_latest(store: Backend) -> None:
    """P-WF-1."""
    rows = [_sequence("b", 1), _sequence("a", 1), _sequence("a", 2), _sequence("c", 1),
            _sequence("a", 3, tenant="t2")]  # fmt: skip

    async def check(s: Storage) -> None:
        async with s.transaction() as tx:
            store_ = tx.workflows
            await store_.lock_sequence_name(TENANT, "a")  # definers of a name take turns
            assert await store_.sequence(TENANT, "a", None) is None
            for row in rows:
                await store_.insert_sequence(row)  # type: ignore[arg-type]
        async with s.transaction() as tx:
            store_ = tx.workflows
            assert await store_.sequence(TENANT, "a", None) == rows[2]  # the latest
            assert await store_.sequence(TENANT, "a", 1) == rows[1]
            assert await store_.sequence(TENANT, "a", 3) is None  # t2's
            assert await store_.list_sequences(TENANT, 10, None) == [rows[2], rows[0], rows[3]]
            assert await store_.list_sequences(TENANT, 1, "a") == [rows[0]]  # after "a"
            assert await store_.list_sequences("t2", 10, None) == [rows[4]]

    store.run(check)


def test_instances_are_inserted_once_per_key_updated_and_listed(store: Backend) -> None:
    """P-WF-4 (idempotent start per tenant), P-WF-8 (listing)."""
    first = _instance("i1", idempotency_key="k")
    again = _instance("i2", idempotency_key="k")
    other_tenant = _instance("i3", idempotency_key="k", tenant="t2")
    done = _instance("i4", sequence="other", status="completed")

    async def check(s: Storage) -> None:
        async with s.transaction() as tx:
            store_ = tx.workflows
            stored, created = await store_.insert_instance(first)  # type: ignore[arg-type]
            assert created and isinstance(stored["seq"], int)
            assert {k: stored[k] for k in first} == first
            existing, created = await store_.insert_instance(again)  # type: ignore[arg-type]
            assert not created and existing == stored
            for row in (other_tenant, done):
                assert (await store_.insert_instance(row))[1]  # type: ignore[arg-type]
        async with s.transaction() as tx:
            store_ = tx.workflows
            assert await store_.instance("i2") is None
            ended = {**stored, "status": "failed", "output": None, "error": {"code": "x"},
                     "state": {"run": 2}, "updated_at": NOW + 5, "finished_at": NOW + 5}  # fmt: skip
            await store_.update_instance(ended)  # type: ignore[arg-type]
            assert await store_.instance("i1") == ended

            async def ids(**kw: Any) -> list[str]:
                args = {"tenant": TENANT, "sequence": None, "statuses": (), "limit": 10,
                        "before_seq": None, **kw}  # fmt: skip
                return [r["id"] for r in await store_.list_instances(**args)]

            assert await ids() == ["i4", "i1"]  # newest first
            assert await ids(sequence="seq") == ["i1"]
            assert await ids(statuses=("completed", "running")) == ["i4"]
            assert await ids(limit=1) == ["i4"]
            i4 = await store_.instance("i4")
            assert i4 is not None and await ids(before_seq=i4["seq"]) == ["i1"]
            assert await ids(tenant="t2") == ["i3"]  # P-TEN-3

    store.run(check)


def test_timers_fire_when_due_and_are_taken_once(store: Backend) -> None:
    """P-WF-3 sleeps: events with a fire_at, taken in the order they were stored by the
    transaction that takes them."""

    async def check(s: Storage) -> None:
        assert await s.next_event_at() is None
        async with s.transaction() as tx:
            await tx.workflows.add_timer(TENANT, "i1", "nap", 1, NOW + 10)
            await tx.workflows.add_timer("t2", "i2", "nap", 2, NOW)
            await tx.workflows.add_timer(TENANT, "i3", "nap", 1, NOW + 99)
        assert await s.next_event_at() == NOW  # P-CLOCK-3: read outside a transaction
        async with s.transaction() as tx:
            due = await tx.workflows.take_due_events(NOW + 10, 10)
            assert [(e["tenant"], e["instance_id"], e["step_id"], e["run"], e["task_id"])
                    for e in due] == [(TENANT, "i1", "nap", 1, None), ("t2", "i2", "nap", 2, None)]  # fmt: skip
            assert await tx.workflows.take_due_events(NOW + 10, 10) == []  # taken
        async with s.transaction() as tx:
            assert len(await tx.workflows.take_due_events(NOW + 99, 1)) == 1
        assert await s.next_event_at() is None

    store.run(check)


def test_a_step_tasks_end_by_a_result_path_stores_no_event(store: Backend) -> None:
    """P-WF-5: a result path advances the step's instance in its own transaction (the
    workflow rules, Workflows.advance), so no backend stores an event for the end, by a
    transition's update or by the set-based completion; the pump sees nothing of it."""
    step = task(context={"instance_id": "i1", "step_id": "s1"})
    running_step = running("ls", context={"instance_id": "i2", "step_id": "s1"})
    plain = task()

    async def check(s: Storage) -> None:
        await insert(s, step, running_step, plain)
        async with s.transaction() as tx:
            await tx.update_task(step["id"], {"status": "completed", "finished_at": NOW})
            done = await tx.complete_running(TENANT, [(running_step["id"], "ls", 1)], NOW)
            assert [r["instance_id"] for r in done] == ["i2"]
        async with s.transaction() as tx:
            assert await tx.workflows.take_due_events(EVENTS_DUE, 10) == []
            ids = [step["id"], running_step["id"], plain["id"]]
            assert await tx.workflows.take_task_events(ids) == []

    store.run(check)


def test_take_task_events_takes_the_stored_events_of_those_tasks(store: Backend) -> None:
    """Events stored for a task (expiry's, P-WF-5) are dropped with it, e.g. when its
    instance is cancelled (P-WF-7)."""
    steps = [task(good_until=NOW, context={"instance_id": f"i{n}", "step_id": "s"}) for n in (1, 2)]

    async def check(s: Storage) -> None:
        await insert(s, *steps)
        async with s.transaction() as tx:
            assert await tx.expire_overdue(NOW) == 2
            taken = await tx.workflows.take_task_events([steps[0]["id"]])
            assert [(e["instance_id"], e["task_id"]) for e in taken] == [("i1", steps[0]["id"])]
        async with s.transaction() as tx:
            left = await tx.workflows.take_due_events(EVENTS_DUE, 10)
            assert [e["instance_id"] for e in left] == ["i2"]

    store.run(check)


def test_instances_are_read_together_and_updated_together(store: Backend) -> None:
    """P-WF-5 advancing many instances in one unit: one read for all of them, then
    updates a later read sees; `updated` names the rows such a read made stale. Several
    updates in one transaction are one statement on PostgreSQL: a null output stays
    NULL there, as one update leaves it."""
    rows = [_instance(f"i{n}") for n in (1, 2, 3)]

    async def check(s: Storage) -> None:
        async with s.transaction() as tx:
            for row in rows:
                await tx.workflows.insert_instance(row)  # type: ignore[arg-type]
        async with s.transaction() as tx:
            store_ = tx.workflows
            read = await store_.instances(["i3", "i1", "nope", "i1"])
            assert sorted(read) == ["i1", "i3"] and read["i1"]["state"] == rows[0]["state"]
            assert store_.updated == set()
            one = {**read["i1"], "status": "completed", "output": {"v": [1]},
                   "state": {"run": 1, "steps": {"a": 1}}, "finished_at": NOW + 1}  # fmt: skip
            three = {
                **read["i3"],
                "status": "failed",
                "error": {"code": "x"},
                "updated_at": NOW + 2,
            }
            await store_.update_instance(one)  # type: ignore[arg-type]
            await store_.update_instance(three)  # type: ignore[arg-type]
            assert store_.updated == {"i1", "i3"}
            assert await store_.instance("i1") == one  # read-your-writes within the unit
        async with s.transaction() as tx:
            again = await tx.workflows.instances(["i1", "i2", "i3"])
            assert again == {"i1": one, "i2": {**again["i2"], **rows[1]}, "i3": three}
        if s.__class__.__name__ == "PgStorage":
            async with s._conn() as conn:  # type: ignore[attr-defined]
                nulls = await conn.fetch(
                    "SELECT id, output IS NULL AS o, error IS NULL AS e FROM instances ORDER BY id"
                )
            # SQL NULLs, not JSON nulls
            assert [tuple(r) for r in nulls] == [("i1", False, True), ("i2", True, True),
                                                 ("i3", True, False)]  # fmt: skip

    store.run(check)


def test_a_stored_step_key_is_adopted_before_the_instance_update_is_sent(store: Backend) -> None:
    """`insert_task(adopt=...)` (P-WF-4: the next steps of an instance the advance holds
    locked): a new key is stored; a key stored already goes to `adopt(existing)` before the
    next read or the commit and before the writes buffered after it, so an instance state
    that `adopt` changes is stored changed, and the row whose key was taken is not stored."""
    held = task(idempotency_key="wf:i1:1:step:b", params={"n": 1})
    fresh = task(idempotency_key="wf:i1:1:step:c", params={"n": 2})
    late = task(idempotency_key="wf:i1:1:step:b", params={"n": 3})

    async def check(s: Storage) -> None:
        await insert(s, held)
        async with s.transaction() as tx:
            await tx.workflows.insert_instance(_instance("i1"))  # type: ignore[arg-type]
        adopted: list[dict[str, Any]] = []
        async with s.transaction() as tx:
            inst = (await tx.workflows.instances(["i1"]))["i1"]
            steps: dict[str, Any] = inst["state"]["steps"]

            def adopt(existing: Any) -> None:
                adopted.append(existing)
                steps["b"] = existing["id"]

            got, created = await tx.insert_task(fresh, adopt=adopt)  # type: ignore[arg-type]
            assert created and got["id"] == fresh["id"]
            got, created = await tx.insert_task(late, adopt=adopt)  # type: ignore[arg-type]
            # Either at once (the existing row, not created) or later, through `adopt`.
            assert got["id"] == (late["id"] if created else held["id"]), (got, created)
            if not created:
                adopt(got)
            steps["c"] = fresh["id"]
            await tx.workflows.update_instance(inst)
        assert [a["id"] for a in adopted] == [held["id"]]
        assert adopted[0]["params"] == {"n": 1}
        async with s.transaction() as tx:
            stored = (await tx.workflows.instances(["i1"]))["i1"]
        assert stored["state"]["steps"] == {"b": held["id"], "c": fresh["id"]}
        assert await s.get_task(late["id"]) is None
        got_fresh = await s.get_task(fresh["id"])
        assert got_fresh is not None and got_fresh["idempotency_key"] == "wf:i1:1:step:c"

    store.run(check)
