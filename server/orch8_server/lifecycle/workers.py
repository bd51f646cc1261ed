"""Worker rules: registration, batched heartbeats, directives, death (P-WORKER-1..6)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orch8_server import timefmt
from orch8_server.config import Settings
from orch8_server.lifecycle import transitions, views
from orch8_server.lifecycle.attempts import WORKER_LOST_CODE
from orch8_server.lifecycle.controls import Controls
from orch8_server.lifecycle.effects import UnitOfWork, Work
from orch8_server.lifecycle.tenancy import Confinement, owned
from orch8_server.problems import not_found
from orch8_server.storage.base import Row, Storage, Tx

if TYPE_CHECKING:
    from orch8_server._generated.models import (
        ActiveTaskStatus,
        Worker,
        WorkerDirective,
        WorkerHeartbeat,
        WorkerHeartbeatResult,
        WorkerList,
        WorkerRegistration,
    )

log = logging.getLogger("orch8.workers")


async def reclaim_held(uow: UnitOfWork, tenant: str, worker_id: str, message: str) -> None:
    """P-WORKER-5: the running tasks a lost worker held come back (or fail), each
    attempt ended as worker_lost."""
    for task in await uow.db.running_tasks_of(tenant, worker_id):
        await uow.apply(transitions.reclaim(task, uow.now, WORKER_LOST_CODE, message))


class Workers:
    def __init__(
        self, settings: Settings, storage: Storage, work: Work, controls: Controls
    ) -> None:
        self.settings = settings
        self.storage = storage
        self.work = work
        self.controls = controls  # its cache of workers' labels (P-LABEL-1, P-AUTH-7)

    def _view(self, row: Row, active: int) -> Worker:
        s = self.settings
        return views.worker(row, active, s.heartbeat_interval_ms, s.dead_after_ms)

    async def _active(self, tenant: str, worker_id: str) -> int:
        counts = await self.storage.active_task_counts(tenant, [worker_id])
        return counts.get(worker_id, 0)

    @staticmethod
    def _new_row(
        tenant: str, worker_id: str, body: Mapping[str, Any], now: int, key_id: str | None
    ) -> Row:
        return {
            "key_id": key_id,  # P-AUTH-7
            "tenant": tenant,  # P-TEN-3: worker ids are per tenant
            "worker_id": worker_id,
            "state": "running",
            "directive": "running",
            "hostname": body.get("hostname"),
            "pid": body.get("pid"),
            "handlers": body.get("handlers", []),
            "queues": body.get("queues", []),
            "concurrency": body.get("concurrency"),
            "labels": body.get("labels", {}),
            "sdk": body.get("sdk"),
            "registered_at": now,
            "last_heartbeat_at": now,
        }

    async def register(
        self,
        tenant: str,
        body: WorkerRegistration,
        key_id: str | None = None,
        confined: Confinement | None = None,
    ) -> Worker:
        """P-WORKER-1: idempotent on (tenant, worker_id); a new process starts with
        directive running. The worker belongs to the key that registers it (P-AUTH-7)."""
        now = timefmt.now_ms()
        row = self._new_row(tenant, body["worker_id"], body, now, key_id)
        async with self.storage.transaction() as tx:
            if confined is not None:
                confined.check_claim(
                    await tx.get_worker(tenant, row["worker_id"]), row["worker_id"]
                )
            await tx.upsert_worker(row)
        # P-LABEL-1: its latest labels
        self.controls.forget_worker(tenant, row["worker_id"])
        return self._view(row, await self._active(tenant, row["worker_id"]))

    async def get(self, tenant: str, worker_id: str, confined: Confinement | None = None) -> Worker:
        row = await self.storage.get_worker(tenant, worker_id)  # P-TEN-3
        if confined is not None:
            confined.check_worker(row, worker_id)  # P-AUTH-7
        if row is None:
            raise not_found("worker", worker_id)
        return self._view(row, await self._active(tenant, worker_id))

    async def list(self, tenant: str, state: str | None) -> WorkerList:
        rows = await self.storage.list_workers(tenant, state)  # P-TEN-3
        ids = [r["worker_id"] for r in rows]
        counts = await self.storage.active_task_counts(tenant, ids)
        return {"workers": [self._view(r, counts.get(r["worker_id"], 0)) for r in rows]}

    async def heartbeat(
        self,
        tenant: str,
        worker_id: str,
        body: WorkerHeartbeat,
        key_id: str | None = None,
        confined: Confinement | None = None,
    ) -> WorkerHeartbeatResult:
        """P-WORKER-2/3: extend every lease the worker still holds; answer per task."""
        now = timefmt.now_ms()
        task_ids = list(dict.fromkeys(body.get("active_task_ids", [])))
        lease_override = body.get("lease_ms")
        answers = []
        async with self.storage.transaction() as tx:
            row = await tx.get_worker(tenant, worker_id)
            if confined is not None:
                confined.check_worker(row, worker_id)  # P-AUTH-7
            if row is None:  # unknown worker: register it on the fly, with the key
                row = self._new_row(tenant, worker_id, {}, now, key_id)
                await tx.upsert_worker(row)
            state = body.get("state", "running")
            await tx.update_worker(tenant, worker_id, {"state": state, "last_heartbeat_at": now})
            held = {
                t["id"]: t for t in await tx.tasks_by_ids(task_ids) if owned(t, tenant)
            }  # P-TEN-3: another tenant's task is lease_lost, like an unknown one
            for task_id in task_ids:
                answers.append(
                    await self._task_status(
                        tx, held.get(task_id), task_id, worker_id, lease_override, now
                    )
                )
        return {
            "directive": row["directive"],
            "heartbeat_interval_ms": self.settings.heartbeat_interval_ms,
            "tasks": answers,
        }

    async def _task_status(
        self,
        tx: Tx,
        task: Row | None,
        task_id: str,
        worker_id: str,
        lease_override: int | None,
        now: int,
    ) -> ActiveTaskStatus:
        if task is not None and task["worker_id"] == worker_id:
            if task["status"] == "running":
                expires = now + int(lease_override or task["lease_ms"])
                await tx.update_task(task_id, {"lease_expires_at": expires, "updated_at": now})
                return {
                    "task_id": task_id,
                    "lease_expires_at": timefmt.iso(expires),
                    "cancel_requested": False,
                    "lease_lost": False,
                }
            if task["status"] == "cancelled":
                return {
                    "task_id": task_id,
                    "lease_expires_at": None,
                    "cancel_requested": True,
                    "lease_lost": False,
                }
        return {
            "task_id": task_id,
            "lease_expires_at": None,
            "cancel_requested": False,
            "lease_lost": True,
        }

    async def set_directive(
        self, tenant: str, worker_id: str, directive: WorkerDirective
    ) -> Worker:
        """P-WORKER-4: the directive reaches the worker with its next heartbeat."""
        async with self.storage.transaction() as tx:
            row = await tx.get_worker(tenant, worker_id)  # P-TEN-3
            if row is None:
                raise not_found("worker", worker_id)
            await tx.update_worker(tenant, worker_id, {"directive": directive})
            row["directive"] = directive
        log.info(
            "worker directive set",
            extra={"tenant": tenant, "worker_id": worker_id, "directive": directive},
        )
        return self._view(row, await self._active(tenant, worker_id))

    async def deregister(
        self, tenant: str, worker_id: str, confined: Confinement | None = None
    ) -> Worker:
        """P-WORKER-5: a deregistered worker's leftover tasks are reclaimed at once."""
        async with self.work() as uow:
            row = await uow.db.get_worker(tenant, worker_id)  # P-TEN-3
            if confined is not None:
                confined.check_worker(row, worker_id)  # P-AUTH-7
            if row is None:
                raise not_found("worker", worker_id)
            await uow.db.delete_worker(tenant, worker_id)
            row.update({"state": "deregistered", "last_heartbeat_at": uow.now})
            await reclaim_held(
                uow, tenant, worker_id, f"worker {worker_id} deregistered while holding the task"
            )
        self.controls.forget_worker(tenant, worker_id)
        return self._view(row, 0)

    async def sweep_dead(self) -> int:
        """P-WORKER-5: workers silent for dead_after_ms are dead; their tasks come back."""
        async with self.work() as uow:
            dead = await uow.db.silent_workers(uow.now - self.settings.dead_after_ms)
            for worker in dead:  # every tenant's; each keeps its own tenant
                tenant, worker_id = worker["tenant"], worker["worker_id"]
                await uow.db.update_worker(tenant, worker_id, {"state": "dead"})
                await reclaim_held(
                    uow, tenant, worker_id, f"worker {worker_id} stopped heartbeating"
                )
        for worker in dead:
            log.warning(
                "worker declared dead",
                extra={"tenant": worker["tenant"], "worker_id": worker["worker_id"]},
            )
            self.controls.forget_worker(worker["tenant"], worker["worker_id"])
        return len(dead)
