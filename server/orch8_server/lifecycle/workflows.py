"""Workflow rules: define sequences, start, get, list, cancel and retry instances, and
advance instances when their steps' tasks end (P-WF-1..10).

Advancing (P-WF-5): every result path (complete and fail, single and batch; manual
completion and failure; cancel; the reaper and the worker sweep reclaiming a last attempt)
calls `advance` in the transaction that ended the tasks, with the rows it ended: it takes
those ends as instance events (`ended_events`: on PostgreSQL a trigger recorded them,
since a completion commits alone before `advance` runs; on SQLite, one transaction, the
rows are the events), locks each instance, applies the state machine
(workflow_steps.py), inserts the next steps' tasks (idempotency key per instance, run and
step, so a step is dispatched once however often an event is seen), arms sleep timers and
deletes the events, all committed with the result or not at all. A task without
`context.instance_id` costs one dict lookup. `pump` takes what is left: due sleep timers,
and the safety net for task ends no result path reaches (claim-time and good_until
expiry, whose statements record an event). No state lives only in memory, so any
replica may pump (PostgreSQL: SKIP LOCKED events, FOR UPDATE instances).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from orch8_server import ids, timefmt
from orch8_server.lifecycle import workflow_defs, workflow_views
from orch8_server.lifecycle.attempts import end_attempt
from orch8_server.lifecycle.tasks import DEFAULT_QUEUE, new_task_row
from orch8_server.lifecycle.workflow_steps import FINAL, Machine, initial_state
from orch8_server.problems import Problem, not_found
from orch8_server.storage.base import Row, StorageUnavailable, Tx

if TYPE_CHECKING:
    from orch8_server._generated.models import NewInstance, NewSequence
    from orch8_server.lifecycle.engine import Engine

log = logging.getLogger("orch8.workflows")
EVENT_BATCH = 100
IDLE_PUMP_S = 0.2  # events of other replicas' tasks and of claim-time expiry: found by this
TRACE_HEADERS = ("traceparent", "tracestate")


def store_for(kind: str) -> Any:
    if kind == "sqlite":
        from orch8_server.storage.sqlite_workflows import SqliteWorkflows

        return SqliteWorkflows()
    from orch8_server.storage.postgres_workflows import PostgresWorkflows

    return PostgresWorkflows()


def _instance_of(row: Row) -> Any:
    """The instance a task row is a step of: the fast completion path returns the
    column itself; full rows carry the context."""
    if "instance_id" in row:
        return row["instance_id"]
    return (row.get("context") or {}).get("instance_id")


@dataclass
class Advanced:
    """What an advance did, announced once its transaction committed."""

    now: int
    touched: list[Row] = field(default_factory=list)
    finished: list[Row] = field(default_factory=list)


class Workflows:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.store = store_for(engine.storage.kind)
        self._poke = asyncio.Event()
        self._finished: dict[str, asyncio.Event] = {}  # instance id -> waiters' event
        self._loop: asyncio.Task[None] | None = None
        self._stopping = False

    # Sequences (P-WF-1, P-WF-2) -----------------------------------------------------

    async def define(self, tenant: str, body: NewSequence) -> tuple[Any, bool]:
        workflow_defs.validate(body)
        definition = {"steps": body["steps"], "on_error": body.get("on_error")}
        now = timefmt.now_ms()
        async with self.engine.storage.transaction() as tx:
            if hasattr(self.store, "lock_sequence_name"):
                await self.store.lock_sequence_name(tx, tenant, body["name"])
            latest = await self.store.sequence(tx, tenant, body["name"], None)
            if latest is not None and latest["definition"] == definition:
                return workflow_views.sequence(latest), False  # P-WF-1: idempotent
            row = {"tenant": tenant, "name": body["name"], "created_at": now,
                   "version": 1 if latest is None else latest["version"] + 1,
                   "definition": definition}  # fmt: skip
            await self.store.insert_sequence(tx, row)
        return workflow_views.sequence(row), True

    async def get_sequence(self, tenant: str, name: str, version: int | None) -> Any:
        async with self.engine.storage.transaction() as tx:
            row = await self.store.sequence(tx, tenant, name, version)
        if row is None:
            raise not_found("sequence", name if version is None else f"{name} version {version}")
        return workflow_views.sequence(row)

    async def list_sequences(self, tenant: str, limit: int, cursor: str | None) -> Any:
        async with self.engine.storage.transaction() as tx:
            rows = await self.store.list_sequences(tx, tenant, limit + 1, cursor)
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
        now = timefmt.now_ms()
        version = body.get("version")
        if self.engine.backpressure.limits_enqueues:  # P-BP-1, P-BP-2: before anything is stored
            version = await self._admit_start(tenant, body, now)
        async with self.engine.storage.transaction() as tx:
            seq = await self.store.sequence(tx, tenant, body["sequence"], version)
            if seq is None:
                raise not_found("sequence", body["sequence"])
            definition = seq["definition"]
            trace = {k: v for k, v in headers.items() if k in TRACE_HEADERS}
            inst = {
                "id": "inst_" + ids.task_id()[5:], "tenant": tenant, "sequence": seq["name"],
                "version": seq["version"], "status": "running", "input": body.get("input", {}),
                "output": None, "error": None, "state": initial_state(definition, trace),
                "idempotency_key": body.get("idempotency_key"), "created_at": now,
                "updated_at": now, "finished_at": None,
            }  # fmt: skip
            inst, created = await self.store.insert_instance(tx, inst)
            wakes: list[Row] = []
            if created:
                machine = Machine(inst, definition, now)
                machine.start()
                wakes = await self._apply(tx, machine)
        self._announce(wakes, now, inst)
        return workflow_views.instance(inst), created

    async def _admit_start(self, tenant: str, body: NewInstance, now: int) -> int:
        """P-BP-1, P-BP-2: a start takes enqueue tokens and checks the queue depth for the
        tasks it dispatches at once (found by running the state machine on a copy; pure),
        so it stores nothing when refused. Returns the version it admitted, which the start
        then uses. Steps dispatched later by the engine are never refused: an accepted
        instance must not stall."""
        async with self.engine.storage.transaction() as tx:
            seq = await self.store.sequence(tx, tenant, body["sequence"], body.get("version"))
        if seq is None:
            raise not_found("sequence", body["sequence"])
        definition = seq["definition"]
        probe = {"id": "inst_probe", "input": body.get("input", {}), "status": "running",
                 "state": initial_state(definition, {}), "updated_at": now}  # fmt: skip
        machine = Machine(probe, definition, now)
        machine.start()
        queues = [d.action.get("queue_name", DEFAULT_QUEUE) for d in machine.dispatches]
        backpressure = self.engine.backpressure
        if backpressure.rate and len(queues) > backpressure.burst:  # can never pass: 422
            raise Problem(
                "validation_error",
                f"starting sequence {seq['name']} version {seq['version']} dispatches "
                f"{len(queues)} tasks at once, more than the enqueue burst of "
                f"{backpressure.burst} (--enqueue-burst)",
                errors=[{"pointer": "/sequence",
                         "detail": f"dispatches more than {backpressure.burst} tasks at once"}],
            )  # fmt: skip
        if queues:
            await backpressure.admit_enqueue(queues, tenant=tenant)
        version: int = seq["version"]
        return version

    async def get(self, tenant: str, instance_id: str, wait_ms: int = 0) -> Any:
        """P-WF-9: with wait_ms, answer once the instance is final or the wait is over."""
        deadline = timefmt.now_ms() + wait_ms
        while True:
            async with self.engine.storage.transaction() as tx:
                inst = await self.store.instance(tx, instance_id)
            if inst is None or inst["tenant"] != tenant:  # P-TEN-3
                raise not_found("instance", instance_id)
            left = deadline - timefmt.now_ms()
            if inst["status"] in FINAL or left <= 0:
                return workflow_views.instance(inst)
            event = self._finished.setdefault(instance_id, asyncio.Event())
            # Woken by this replica's pump; the bound re-reads for other replicas' pumps.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout=min(left, 500) / 1000)

    async def list_instances(
        self, tenant: str, sequence: str | None, statuses: tuple[str, ...], limit: int,
        cursor: str | None,
    ) -> Any:  # fmt: skip
        before = min(int(cursor), 2**63 - 1) if cursor is not None else None
        async with self.engine.storage.transaction() as tx:
            rows = await self.store.list_instances(
                tx, tenant, sequence, statuses, limit + 1, before
            )
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "instances": [workflow_views.instance(r) for r in rows],
            "next_cursor": str(rows[-1]["seq"]) if more else None,
        }

    async def _operate(self, tenant: str, instance_id: str, op: str, reason: str | None) -> Any:
        now = timefmt.now_ms()
        async with self.engine.storage.transaction() as tx:
            inst = await self.store.instance(tx, instance_id)
            if inst is None or inst["tenant"] != tenant:  # P-TEN-3
                raise not_found("instance", instance_id)
            status = inst["status"]
            if op == "cancel" and status == "cancelled":
                return workflow_views.instance(inst)
            allowed = "running" if op == "cancel" else "failed"
            if status != allowed:
                raise Problem(
                    "invalid_state",
                    f"instance {instance_id} is {status}; only a {allowed} instance can be "
                    f"{'cancelled' if op == 'cancel' else 'retried'}",
                )
            seq = await self.store.sequence(tx, tenant, inst["sequence"], inst["version"])
            machine = Machine(inst, seq["definition"], now)
            if op == "cancel":
                machine.cancel()
            else:
                machine.retry()
            wakes = await self._apply(tx, machine, reason)
            if machine.cancels:  # their ends advance nothing now: drop their events
                await self.store.take_task_events(tx, list(machine.cancels))
        self._announce(wakes, now, inst)
        return workflow_views.instance(inst)

    async def cancel(self, tenant: str, instance_id: str, reason: str | None) -> Any:
        return await self._operate(tenant, instance_id, "cancel", reason)

    async def retry(self, tenant: str, instance_id: str) -> Any:
        return await self._operate(tenant, instance_id, "retry", None)

    # Applying the machine's actions, in the caller's transaction -----------------------

    async def _apply(self, tx: Tx, machine: Machine, reason: str | None = None) -> list[Row]:
        """Dispatch, arm and cancel what the machine decided; store the instance. Returns
        the created tasks (announced after commit) and the freed running tasks."""
        inst, now = machine.inst, machine.now
        touched: list[Row] = []
        for d in machine.dispatches:  # P-WF-4: a worker task per step, once per run
            a = d.action
            body = {"handler_name": a["handler"], "params": a.get("params", {}),
                    "context": {"instance_id": inst["id"], "step_id": d.record["id"]},
                    "headers": inst["state"].get("headers") or {}}  # fmt: skip
            for name in ("queue_name", "priority", "retry"):
                if name in a:
                    body[name] = a[name]
            row = new_task_row(body, now, "", inst["tenant"])
            row["idempotency_key"] = d.key
            stored, created = await tx.insert_task(row)
            d.record["task_id"] = stored["id"]
            if created:
                touched.append(stored)
        for t in machine.timers:
            await self.store.add_timer(tx, inst["tenant"], inst["id"], t.step_id, t.run, t.fire_at)
        for task_id in machine.cancels:  # P-WF-7: exactly as cancelTask (P-CANCEL-1/2)
            task = await tx.get_task(task_id)
            if task is None or task["status"] not in ("pending", "scheduled", "running"):
                continue
            fields = {"status": "cancelled", "finished_at": now, "updated_at": now,
                      "cancel_reason": reason or "instance cancelled"}  # fmt: skip
            if task["status"] == "running":
                await end_attempt(tx, task, now, "cancelled", None, None)
                touched.append({**task, **fields, "freed": True})
            await tx.update_task(task_id, fields)
        await self.store.update_instance(tx, inst)
        return touched

    def _announce(self, touched: list[Row], now: int, inst: Row | None = None) -> None:
        freed: list[tuple[str, str, str]] = []
        for row in touched:
            if row.get("freed"):
                freed.append((row["tenant"], row["queue_name"], row["handler_name"]))
            else:  # a step's task: counted like any enqueue
                labels = (row["tenant"], row["queue_name"], row["handler_name"])
                self.engine.metrics.enqueued.labels(*labels).inc()
                self.engine.history.enqueued(row["tenant"], {labels[1:]: 1})  # P-OBS-5
                self.engine.made_claimable(*labels, row["run_at"], now, 1)
        if freed:
            asyncio.get_running_loop().create_task(self.engine.leases.controls.freed(freed))
        if inst is not None and inst["status"] in FINAL:
            event = self._finished.pop(inst["id"], None)
            if event is not None:
                event.set()

    # The pump (P-WF-5) ------------------------------------------------------------------

    def poke(self) -> None:
        """A step task may have ended here: pump now rather than at the next idle tick."""
        self._poke.set()

    async def pump(self) -> int:
        """Consume due events (timers, and the safety net for task ends no result path
        advanced inline, e.g. claim-time expiry); returns how many were taken."""
        now = timefmt.now_ms()
        async with self.engine.storage.transaction() as tx:
            events = await self.store.take_due_events(tx, now, EVENT_BATCH)
            advanced = await self._advance(tx, events, now)
        self.announce(advanced)
        if len(events) == EVENT_BATCH:
            self.poke()
        return len(events)

    async def advance(self, tx: Tx, rows: Iterable[Row | None], now: int) -> Advanced | None:
        """P-WF-5, inline: in the transaction that ended these tasks, consume their
        instance events and advance their instances before commit. A task without
        `context.instance_id` costs one dict lookup; None when no row is a step task."""
        ended = [
            (r["tenant"], iid, r["id"]) for r in rows if r is not None and (iid := _instance_of(r))
        ]
        if not ended:
            return None
        events = await self.store.ended_events(tx, ended)
        if not events:
            return None
        return await self._advance(tx, events, now)

    async def _advance(self, tx: Tx, events: list[Row], now: int) -> Advanced:
        advanced = Advanced(now)
        definitions: dict[tuple[str, str, int], Any] = {}
        by_instance: dict[str, list[Row]] = {}
        for e in events:
            by_instance.setdefault(e["instance_id"], []).append(e)
        for instance_id in sorted(by_instance):  # lock order: no deadlock between replicas
            inst = await self.store.instance(tx, instance_id)
            if inst is None or inst["status"] != "running":
                continue
            key = (inst["tenant"], inst["sequence"], inst["version"])
            if key not in definitions:  # a batch's instances mostly share one version
                definitions[key] = (await self.store.sequence(tx, *key))["definition"]
            machine = Machine(inst, definitions[key], now)
            changed = False
            for e in by_instance[instance_id]:
                if e["task_id"] is not None:
                    task = await tx.get_task(e["task_id"])
                    if task is not None and task["status"] in (*FINAL, "expired"):
                        changed |= machine.on_task(task)
                else:
                    changed |= machine.on_timer(e["step_id"], e["run"])
            if changed:
                advanced.touched += await self._apply(tx, machine)
                if inst["status"] in FINAL:
                    advanced.finished.append(inst)
        return advanced

    def announce(self, advanced: Advanced | None) -> None:
        """Post-commit: wake polls for the dispatched steps, count them as enqueued,
        free capped slots of cancelled tasks, wake instance waiters (P-WF-9)."""
        if advanced is None:
            return
        self._announce(advanced.touched, advanced.now)
        for inst in advanced.finished:
            self._announce([], advanced.now, inst)

    def start_pump(self) -> None:
        self._loop = asyncio.get_running_loop().create_task(self._run())

    async def stop_pump(self) -> None:
        self._stopping = True
        self._poke.set()
        if self._loop is not None:
            await self._loop

    async def _run(self) -> None:
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poke.wait(), timeout=IDLE_PUMP_S)
            self._poke.clear()
            if self._stopping:
                return  # type: ignore[unreachable]  # stop_pump sets it while we wait
            try:
                await self.pump()
            except StorageUnavailable as exc:  # the events stay; the next round takes them
                log.warning("workflow pump skipped: %s", exc)
            except Exception:
                log.exception("workflow pump failed")
