"""Tenant isolation of stored rows (P-TEN-3) and the confinement of worker keys
(P-AUTH-6, P-AUTH-7).

Task ids are unique across tenants, so rules read a task by id and then keep it only when
it belongs to the caller's tenant: another tenant's task is answered exactly like an id
that never existed (404 not_found), never a 403 that would confirm it exists. A worker
key is narrower still: only the tasks of its queues and handlers whose lease it holds, and
only the workers it registered.
"""

from __future__ import annotations

from dataclasses import dataclass

from orch8_server.problems import Problem, not_found
from orch8_server.storage.base import Row, Tx


def owned(row: Row | None, tenant: str) -> Row | None:
    """The row when it is the tenant's, else None (P-TEN-3)."""
    if row is None or row.get("tenant", "default") != tenant:
        return None
    return row


@dataclass(frozen=True, slots=True)
class Confinement:
    """What a `worker` key may act on (P-AUTH-6/7); operators, admins and a server
    without keys have none."""

    key_id: str
    queues: frozenset[str] | None = None  # None = any queue
    handlers: frozenset[str] | None = None  # None = any handler

    @property
    def scoped(self) -> bool:
        return self.queues is not None or self.handlers is not None

    def covers(self, task: Row) -> bool:
        """P-AUTH-6: the task's queue and handler are in the key's scope."""
        return (self.queues is None or task["queue_name"] in self.queues) and (
            self.handlers is None or task["handler_name"] in self.handlers
        )

    def owns_worker(self, worker: Row | None) -> bool:
        """P-AUTH-7: the worker was registered with this key."""
        return worker is not None and worker.get("key_id") == self.key_id

    async def check_task(self, tx: Tx, task: Row, task_id: str, lease_id: str | None) -> None:
        """P-AUTH-6: 404 outside the key's scope; 403 for a task in scope whose lease the
        caller does not name and whose holder was not registered with this key."""
        if not self.covers(task):
            raise not_found("task", task_id)
        if lease_id is not None:
            return  # the lease id is the proof; a wrong one is lease_lost as for anyone
        holder = task.get("worker_id")
        if holder is not None and self.owns_worker(await tx.get_worker(task["tenant"], holder)):
            return
        raise Problem(
            "forbidden",
            f"key {self.key_id!r} holds no lease of task {task_id}: send the lease_id "
            "your poll returned, or act through a worker registered with this key",
        )

    def check_worker(self, worker: Row | None, worker_id: str) -> None:
        """P-AUTH-7: another key's worker is not found."""
        if worker is not None and not self.owns_worker(worker):
            raise not_found("worker", worker_id)

    def check_claim(self, worker: Row | None, worker_id: str) -> None:
        """P-AUTH-7: registering or polling under another key's worker id is 403."""
        if worker is not None and worker.get("key_id") not in (None, self.key_id):
            raise Problem(
                "forbidden",
                f"worker {worker_id} is registered with another key; use your own worker id",
            )
