"""Workflow rules: define sequences, start, get, list, cancel and retry instances, and
advance instances when their steps' tasks end (P-WF-1..10).

Advancing (P-WF-5): `advance` is a before-commit hook of every unit of work
(effects.py), so every path that ends a task (complete and fail, single and batch; manual
resolution; cancel; lease expiry and lost workers) advances its instance in the same
transaction, with no call at the call site. It takes the ended tasks that are steps as
instance events (the rows themselves: nothing is stored for them; on PostgreSQL a batch
completion commits alone only the rows that are no step),
locks their instances (one statement for all), applies the state machine
(workflow_steps.py), inserts the next steps' tasks (idempotency key per instance, run and
step, so a step is dispatched once however often an event is seen), arms sleep timers and
cancels through `transitions.cancel`, all committed with the result or not at
all; the unit's effects then wake polls and instance waiters. A task without
`context.instance_id` costs one dict lookup. `pump` (the workflow-pump service) takes
what is left: due sleep timers, and the safety net for task ends no unit saw (claim-time
and good_until expiry, whose statements record an event). No state lives only in memory,
so any replica may pump (PostgreSQL: SKIP LOCKED events, FOR UPDATE instances).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from orch8_server import ids, timefmt
from orch8_server.lifecycle import (
    instance_keys,
    transitions,
    workflow_defs,
    workflow_start,
    workflow_tree,
    workflow_views,
)
from orch8_server.lifecycle.backpressure import Backpressure
from orch8_server.lifecycle.effects import InstanceWaiters, UnitOfWork, Work
from orch8_server.lifecycle.tasks import new_task_row
from orch8_server.lifecycle.transitions import UNFINISHED
from orch8_server.lifecycle.workflow_steps import (
    ENGINE_KEY_PREFIX,
    FINAL,
    Machine,
    SubStart,
    failure,
    initial_state,
)
from orch8_server.problems import Problem, not_found
from orch8_server.storage.base import Row, Storage, Tx
from orch8_server.storage.rows import NewInstanceRow, NewTaskRow, SequenceRow, TaskRow

if TYPE_CHECKING:
    from orch8_server._generated.models import NewInstance, NewSequence
    from orch8_server.services import Service

EVENT_BATCH = 100
IDLE_PUMP_S = 0.2  # events of other replicas' tasks and of claim-time expiry: found by this
TRACE_HEADERS = ("traceparent", "tracestate")
_RESULT_KEYS = frozenset({"id", "status", "attempt", "output"})  # what Machine.on_task reads


def _instance_of(row: Row) -> Any:
    """The instance a task row is a step of: the fast completion path returns the
    column itself; full rows carry the context."""
    if "instance_id" in row:
        return row["instance_id"]
    return (row.get("context") or {}).get("instance_id")


class Workflows:
    def __init__(
        self, storage: Storage, work: Work, backpressure: Backpressure, waiters: InstanceWaiters
    ) -> None:
        self.storage = storage
        self.work = work
        self.backpressure = backpressure
        self.waiters = waiters
        work.before_commit(self.advance)  # P-WF-5: in every unit that ends tasks
        self._trees = workflow_tree.TreeCache()
        self._by_version: dict[tuple[str, str, int], workflow_tree.Tree] = {}
        self.pump_service: Service | None = None  # set by compose: a child's end wakes it

    async def _version_tree(self, tx: Tx, inst: Row) -> workflow_tree.Tree:
        """The tree of an instance's version: a version never changes once stored, so
        its compiled tree is kept and the row not read again."""
        key = (inst["tenant"], inst["sequence"], inst["version"])
        tree = self._by_version.get(key)
        if tree is None:
            seq = await tx.workflows.sequence(*key)
            assert seq is not None  # an instance's version is never deleted
            tree = self._by_version[key] = self._tree(seq)
            if len(self._by_version) > 1024:
                self._by_version.pop(next(iter(self._by_version)))
        return tree

    def _tree(self, seq: SequenceRow) -> workflow_tree.Tree:
        """The compiled tree of a stored version (rows are never changed: cached)."""
        key = (seq["tenant"], seq["name"], seq["version"], seq["created_at"])
        return self._trees.get(key, seq["definition"])

    # Sequences (P-WF-1, P-WF-2) -----------------------------------------------------

    async def define(self, tenant: str, body: NewSequence) -> tuple[Any, bool]:
        definition = workflow_defs.definition_of(body)
        now = timefmt.now_ms()
        async with self.storage.transaction() as tx:
            await tx.workflows.lock_sequence_name(tenant, body["name"])
            latest = await tx.workflows.sequence(tenant, body["name"], None)
            if latest is not None and latest["definition"] == definition:
                return workflow_views.sequence(latest), False  # P-WF-1: idempotent
            row: SequenceRow = {"tenant": tenant, "name": body["name"], "created_at": now,
                   "version": 1 if latest is None else latest["version"] + 1,
                   "definition": definition}  # fmt: skip
            await tx.workflows.insert_sequence(row)
        return workflow_views.sequence(row), True

    async def get_sequence(self, tenant: str, name: str, version: int | None) -> Any:
        async with self.storage.transaction() as tx:
            row = await tx.workflows.sequence(tenant, name, version)
        if row is None:
            raise not_found("sequence", name if version is None else f"{name} version {version}")
        return workflow_views.sequence(row)

    async def list_sequences(self, tenant: str, limit: int, cursor: str | None) -> Any:
        async with self.storage.transaction() as tx:
            rows = await tx.workflows.list_sequences(tenant, limit + 1, cursor)
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "sequences": [workflow_views.sequence(r) for r in rows],
            "next_cursor": rows[-1]["name"] if more else None,
        }

    # Instances (P-WF-4, P-WF-7..9) -------------------------------------------------------

    async def start(
        self, tenant: str, body: NewInstance, headers: dict[str, str]
    ) -> tuple[Any, bool]:
        """P-WF-4: one instance; (its view, whether this call started it)."""
        [(view, created)] = await self.start_many(tenant, [body], headers, "")
        return view, created

    async def start_many(
        self, tenant: str, bodies: list[NewInstance], headers: dict[str, str], pointer: str
    ) -> list[tuple[Any, bool]]:
        """P-WF-14: start every body in one transaction, in order; all or none. `pointer`
        is where the bodies are in the request ("" for a single start, "/instances" for a
        batch), so a problem names the item it is about."""
        now = timefmt.now_ms()
        keys = []
        for i, body in enumerate(bodies):
            with workflow_start.item(pointer, i):
                if str(body.get("idempotency_key", "")).startswith(ENGINE_KEY_PREFIX):
                    raise Problem(  # P-WF-13
                        "validation_error", f"idempotency_key must not begin with "
                        f"{ENGINE_KEY_PREFIX!r} (reserved for the child instances of "
                        "sub_sequence blocks)",
                        errors=[{"pointer": "/idempotency_key", "detail": "reserved prefix wf:"}],
                    )  # fmt: skip
                keys.append(instance_keys.key_of(body))
        versions = [body.get("version") for body in bodies]
        if self.backpressure.limits_enqueues:  # P-BP-1, P-BP-2: before anything is stored
            versions = await workflow_start.admit(
                self.storage, self.backpressure, self._tree, tenant, bodies, now, pointer
            )
        trace = {k: v for k, v in headers.items() if k in TRACE_HEADERS}
        started: list[tuple[Any, bool]] = []
        async with self.work(now) as uow:
            tx = uow.db
            seqs: dict[tuple[str, int | None], SequenceRow | None] = {}
            for i, (body, version, (key, limit)) in enumerate(
                zip(bodies, versions, keys, strict=True)
            ):
                with workflow_start.item(pointer, i):
                    name = body["sequence"]
                    if (name, version) not in seqs:  # a batch names few sequences
                        seqs[name, version] = await tx.workflows.sequence(tenant, name, version)
                    seq = seqs[name, version]
                    if seq is None:
                        raise not_found("sequence", name)
                    tree = self._tree(seq)
                    data, config = workflow_start.input_of(body)
                inst: NewInstanceRow = {
                    "id": "inst_" + ids.task_id()[5:], "tenant": tenant, "sequence": seq["name"],
                    "version": seq["version"], "status": "running", "input": data,
                    "output": None, "error": None, "state": initial_state(tree, trace, config),
                    "idempotency_key": body.get("idempotency_key"), "created_at": now,
                    "updated_at": now, "finished_at": None, "concurrency_key": key,
                    "max_concurrency": limit,
                }  # fmt: skip
                if not await instance_keys.has_room(tx, inst):  # P-KEY-7: waits for a slot
                    inst["status"] = instance_keys.HELD
                # No key, no existing instance to return: the row is stored once, after its
                # first block (not inserted, then updated), or as it is when held.
                keyless, created = inst["idempotency_key"] is None, True
                if not keyless:
                    inst, created = await tx.workflows.insert_instance(inst)
                if created and inst["status"] == "running":
                    machine = Machine(inst, tree, now)
                    machine.start()
                    await self._apply(uow, machine, new=True, insert=keyless)
                elif keyless:
                    await tx.workflows.add_instance(inst)
                started.append((inst, created))
        return [(workflow_views.instance(inst), created) for inst, created in started]

    async def get(self, tenant: str, instance_id: str, wait_ms: int = 0) -> Any:
        """P-WF-9: with wait_ms, answer once the instance is final or the wait is over."""
        deadline = timefmt.now_ms() + wait_ms
        while True:
            left = deadline - timefmt.now_ms()
            async with self.storage.transaction() as tx:
                inst = await tx.workflows.instance(instance_id)
                if inst is None or inst["tenant"] != tenant:  # P-TEN-3
                    raise not_found("instance", instance_id)
                if inst["status"] in FINAL or left <= 0:
                    view = workflow_views.instance(inst)
                    if inst["status"] == instance_keys.HELD:
                        view["waiting"] = await instance_keys.waiting(tx, inst)
                    return view
            # Woken when it finishes here; the bound re-reads for other replicas.
            await self.waiters.wait(instance_id, min(left, 500) / 1000)

    async def list_instances(
        self, tenant: str, sequence: str | None, statuses: tuple[str, ...], limit: int,
        cursor: str | None,
    ) -> Any:  # fmt: skip
        before = min(int(cursor), 2**63 - 1) if cursor is not None else None
        if "running" in statuses:  # P-KEY-7: a held instance is running on the wire
            statuses = (*statuses, instance_keys.HELD)
        async with self.storage.transaction() as tx:
            rows = await tx.workflows.list_instances(tenant, sequence, statuses, limit + 1, before)
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "instances": [workflow_views.instance(r) for r in rows],
            "next_cursor": str(rows[-1]["seq"]) if more else None,
        }

    async def _operate(self, tenant: str, instance_id: str, op: str, reason: str | None) -> Any:
        async with self.work() as uow:
            tx, now = uow.db, uow.now
            inst = await tx.workflows.instance(instance_id)
            if inst is None or inst["tenant"] != tenant:  # P-TEN-3
                raise not_found("instance", instance_id)
            status = instance_keys.wire_status(inst["status"])
            if op == "cancel" and status == "cancelled":
                return workflow_views.instance(inst)
            allowed = "running" if op == "cancel" else "failed"
            if status != allowed:
                raise Problem(
                    "invalid_state",
                    f"instance {instance_id} is {status}; only a {allowed} instance can be "
                    f"{'cancelled' if op == 'cancel' else 'retried'}",
                )
            held_slot = inst["status"] == "running"  # a held one gives up no slot
            machine = Machine(inst, await self._version_tree(tx, inst), now)
            if op == "cancel":
                machine.cancel()
            elif await instance_keys.has_room(tx, inst):
                machine.retry()
            else:  # P-KEY-7: resumes when an instance of its key ends
                machine.retry(start=False)
                inst["status"] = instance_keys.HELD
            # The steps it cancels end in this unit: the advance hook takes their
            # events, and advances nothing (the instance is no longer running).
            await self._apply(uow, machine, reason, held_slot=held_slot)
        return workflow_views.instance(inst)

    async def cancel(self, tenant: str, instance_id: str, reason: str | None) -> Any:
        return await self._operate(tenant, instance_id, "cancel", reason)

    async def retry(self, tenant: str, instance_id: str) -> Any:
        return await self._operate(tenant, instance_id, "retry", None)

    # Applying the machine's actions, in the caller's unit of work ---------------------

    async def _apply(
        self, uow: UnitOfWork, machine: Machine, reason: str | None = None,
        held_slot: bool = True, new: bool = False, insert: bool = False,
    ) -> None:  # fmt: skip
        """Start children, dispatch, arm and cancel what the machine decided; store the
        instance; tell a parent instance when this one ended (P-WF-13), and give its slot
        of a concurrency key to the instances waiting for one (P-KEY-7). `new`: the
        instance was created in this unit, so no task can hold its steps' keys yet (they
        name the instance) and their inserts are buffered, not sent one at a time.
        `insert`: the instance is not stored yet (a start without an idempotency key, so
        none can exist): it is inserted here, once, in the state the machine left."""
        inst, now, tx = machine.inst, machine.now, uow.db
        while machine.subs:  # a child that cannot start fails its block: maybe more to do
            subs, machine.subs = machine.subs, []
            for sub in subs:
                await self._start_child(uow, machine, sub)
        trace = inst["state"].get("headers") or {}
        for d in machine.dispatches:  # P-WF-4: a worker task per step, once per run
            a, rec = d.action, d.record
            context = {"instance_id": inst["id"], "step_id": rec["id"]}
            if rec["key"] != rec["id"]:  # inside a loop body: which iteration
                context["step_key"] = rec["key"]
            body = {"handler_name": a["handler"], "params": a.get("params", {}),
                    "context": context, "headers": {**a.get("headers", {}), **trace}}  # fmt: skip
            for name in ("queue_name", "priority", "retry", "concurrency_key", "max_concurrency",
                         "rate_limit_key"):  # fmt: skip
                if name in a:
                    body[name] = a[name]
            row = new_task_row(body, now, "", inst["tenant"])
            row["idempotency_key"] = d.key
            # The instance is locked: its state knows its steps' tasks, so the key is new
            # unless a row was stored before the state knew of it (a crash of an earlier
            # version's advance); such a row is adopted as the step's (P-WF-4), possibly
            # at the flush, where PostgreSQL sends an advance's steps as one statement.
            adopt = None if new else partial(_adopted, uow, rec, row)
            stored, created = await tx.insert_task(row, new_key=new, adopt=adopt)
            rec["task_id"] = stored["id"]
            if created:
                uow.created.append(stored)
        for t in machine.timers:
            await tx.workflows.add_timer(inst["tenant"], inst["id"], t.step_id, t.run, t.fire_at)
        for task_id in machine.cancels:  # P-WF-7: the task rule of P-CANCEL-1/2
            task = await tx.get_task(task_id)
            if task is not None and task["status"] in UNFINISHED:
                change = transitions.cancel(task, now, reason or "instance cancelled")
                if change is not None:
                    await uow.apply(change)
        for child_id in machine.sub_cancels:  # parent before child: the lock order
            child = await tx.workflows.instance(child_id)
            if child is not None and child["status"] == "running":
                child_machine = Machine(child, await self._version_tree(tx, child), now)
                child_machine.cancel()
                await self._apply(uow, child_machine, reason)
        if insert:
            await tx.workflows.add_instance(inst)
        else:
            await tx.workflows.update_instance(inst)
        if inst["status"] in FINAL:
            uow.finished_instances.append(inst["id"])
            parent = inst["state"].get("parent")
            if parent is not None:  # the parent's pump reads this child (P-WF-13)
                await tx.workflows.add_timer(inst["tenant"], parent["instance_id"],
                                             parent["key"], parent["run"], now)  # fmt: skip
                self._wake_pump()  # a pump run before this commit waits for it or retries
            key = inst.get("concurrency_key")
            if key is not None and held_slot:
                await self._admit(uow, inst["tenant"], key)

    async def _admit(self, uow: UnitOfWork, tenant: str, key: str) -> None:
        """P-KEY-7: start the held instances of the key that fit, in start order. One
        that ends at once (its first block fails) admits the next itself."""
        tx = uow.db
        while (held := await instance_keys.next_admissible(tx, tenant, key)) is not None:
            held["status"], held["updated_at"] = "running", uow.now
            machine = Machine(held, await self._version_tree(tx, held), uow.now)
            machine.start()
            await self._apply(uow, machine)

    async def _start_child(self, uow: UnitOfWork, machine: Machine, sub: SubStart) -> None:
        """P-WF-13: the child instance of a sub_sequence block, in the parent's unit."""
        tx, now, parent = uow.db, machine.now, machine.inst
        tenant = parent["tenant"]
        seq = await tx.workflows.sequence(tenant, sub.sequence, sub.version)
        if seq is None:
            name = sub.sequence if sub.version is None else f"{sub.sequence} version {sub.version}"
            machine.child_failed(sub.record, failure(f"no sequence {name}", "not_found"))
            return
        tree = self._tree(seq)
        data = sub.input if isinstance(sub.input, dict) else {"value": sub.input}
        state = initial_state(tree, parent["state"].get("headers") or {}, {})
        state["parent"] = {"instance_id": parent["id"], "key": sub.record["key"],
                           "run": machine.state["run"]}  # fmt: skip
        state["depth"] = int(machine.state.get("depth", 0)) + 1
        row: NewInstanceRow = {
            "id": "inst_" + ids.task_id()[5:], "tenant": tenant, "sequence": seq["name"],
            "version": seq["version"], "status": "running", "input": data, "output": None,
            "error": None, "state": state, "idempotency_key": sub.key, "created_at": now,
            "updated_at": now, "finished_at": None, "concurrency_key": None,
            "max_concurrency": None,
        }  # fmt: skip
        child, created = await tx.workflows.insert_instance(row)
        sub.record["child_instance_id"] = child["id"]
        if created:
            child_machine = Machine(child, tree, now)
            child_machine.start()
            await self._apply(uow, child_machine, new=True)

    # Advancing (P-WF-5) ------------------------------------------------------------------

    async def pump(self) -> int:
        """Consume due events (timers, and the safety net for task ends no result path
        advanced inline, e.g. claim-time expiry); returns how many were taken. A full
        batch means more are due: the pump service runs again at once."""
        async with self.work() as uow:
            events = await uow.db.workflows.take_due_events(uow.now, EVENT_BATCH)
            await self._advance(uow, events)
        return len(events)

    async def advance(self, uow: UnitOfWork) -> None:
        """The before-commit hook (P-WF-5, inline): the tasks this unit ended that are
        steps are the instance events, advanced in the same transaction (no backend stores
        an event for a step's end). A task without `context.instance_id` costs one dict
        lookup."""
        events: list[Row] = [
            {"id": None, "tenant": r["tenant"], "instance_id": iid, "task_id": r["id"],
             "step_id": None, "run": None}
            for _, r, _ in uow.ended if (iid := _instance_of(r))
        ]  # fmt: skip
        if events:
            # Rows this unit ended with their result need no second read (a third of an
            # advance's CPU on SQLite was that read).
            known = {r["id"]: r for _, r, _ in uow.ended if r.keys() >= _RESULT_KEYS}
            await self._advance(uow, events, known)

    async def _advance(
        self, uow: UnitOfWork, events: list[Row], known: dict[str, Row] | None = None
    ) -> None:
        tx, now = uow.db, uow.now
        by_instance: dict[str, list[Row]] = {}
        for e in events:
            by_instance.setdefault(e["instance_id"], []).append(e)
        # One read for all of them (locked in id order: no deadlock between replicas), and
        # one for the ended tasks this unit did not end itself.
        instances = await tx.workflows.instances(list(by_instance))
        known = dict(known or {})
        unknown = [e["task_id"] for e in events if e["task_id"] and e["task_id"] not in known]
        if unknown:
            known.update((t["id"], t) for t in await tx.tasks_by_ids(unknown))
        for instance_id in sorted(by_instance):
            inst = instances.get(instance_id)
            if instance_id in tx.workflows.updated:  # e.g. a child an earlier one cancelled
                inst = await tx.workflows.instance(instance_id)
            if inst is None or inst["status"] != "running":
                continue
            machine = Machine(inst, await self._version_tree(tx, inst), now)
            changed = False
            for e in by_instance[instance_id]:
                if e["task_id"] is not None:
                    task = known.get(e["task_id"])
                    if task is not None and task["status"] in (*FINAL, "expired"):
                        changed |= machine.on_task(task)
                elif machine.record_type(e["step_id"]) == "sub_sequence":
                    child_id = machine.child_of(e["step_id"])
                    child = None if child_id is None else await tx.workflows.instance(child_id)
                    changed |= machine.on_child(e["step_id"], e["run"], child)
                else:
                    changed |= machine.on_timer(e["step_id"], e["run"])
            if changed:
                await self._apply(uow, machine)

    def _wake_pump(self) -> None:
        if self.pump_service is not None:
            self.pump_service.poke()


def _adopted(uow: UnitOfWork, rec: dict[str, Any], row: NewTaskRow, existing: TaskRow) -> None:
    """A step's key was stored already (P-WF-4): that task is the step's, and `row`, never
    stored, is no longer counted as created."""
    rec["task_id"] = existing["id"]
    uow.created[:] = [r for r in uow.created if r is not row]
