"""Orch8Client: the synchronous client, one typed method per contract operation."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import httpx

from . import _operations as ops
from ._http import Call, ClientConfig, RetryPolicy, connection_error, retry_delay
from .models import (
    AttemptList,
    BatchOutcome,
    ClaimedTask,
    HealthStatus,
    PollBatchResult,
    QueueStatsList,
    ServerInfo,
    Task,
    TaskLeaseStatus,
    TaskOutcome,
    TaskPage,
    Worker,
    WorkerHeartbeatResult,
    WorkerList,
)

OMIT = ops.OMIT


class Orch8Client:
    """Blocking client. `base_url` / `api_key` default to ORCH8_URL / ORCH8_API_KEY (P-SDK-1)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        headers: dict[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.config = ClientConfig.resolve(base_url, api_key, timeout, retry, headers)
        self._generated = self.config.generated_client()
        self._http = httpx.Client(
            base_url=self.config.base_url,
            headers=self.config.request_headers(),
            transport=transport,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Orch8Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, call: Call) -> Any:
        """Send `call`, retrying it when it is safe to repeat (P-SDK-2)."""
        retry = 0
        while True:
            try:
                response = self._http.request(**call.request(self.config))
            except httpx.TransportError as exc:
                delay = retry_delay(call, retry, self.config.retry, None)
                if delay is None:
                    raise connection_error(exc) from exc
            else:
                delay = retry_delay(call, retry, self.config.retry, response)
                if delay is None:
                    return call.parse(self._generated, response)
            time.sleep(delay)
            retry += 1

    # --- tasks -----------------------------------------------------------------------------

    def enqueue(self, handler_name: str, **fields: Any) -> Task:
        """Create a task (P-TASK-1); fields as in `NewTask` (params, context, queue_name, ...)."""
        return cast(Task, self._run(ops.enqueue({"handler_name": handler_name, **fields})))

    def enqueue_batch(self, tasks: Sequence[Mapping[str, Any]]) -> list[Task]:
        """Create 1-100 tasks atomically (P-TASK-2); each a `NewTask` dict."""
        return list(self._run(ops.enqueue_batch(tasks)).tasks)

    def get_task(self, task_id: str) -> Task:
        return cast(Task, self._run(ops.get(task_id)))

    def list_tasks(
        self,
        *,
        status: Iterable[str] | None = None,
        handler_name: str | None = None,
        queue_name: str | None = None,
        worker_id: str | None = None,
        created_after: datetime.datetime | None = None,
        created_before: datetime.datetime | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> TaskPage:
        """One page of tasks, newest first; `status=["failed"]` is the dead-letter view."""
        call = ops.list_(
            status=status,
            handler_name=handler_name,
            queue_name=queue_name,
            worker_id=worker_id,
            created_after=created_after,
            created_before=created_before,
            limit=limit,
            cursor=cursor,
        )
        return cast(TaskPage, self._run(call))

    def cancel_task(self, task_id: str, *, reason: str | None = None) -> Task:
        """P-CANCEL-1."""
        return cast(Task, self._run(ops.cancel(task_id, reason)))

    def retry_task(
        self, task_id: str, *, delay_ms: int | None = None, max_attempts: int | None = None
    ) -> Task:
        """P-RETRY-6: re-run a failed, cancelled or expired task."""
        return cast(Task, self._run(ops.retry(task_id, delay_ms, max_attempts)))

    def complete_task_manually(
        self, task_id: str, *, output: Any = OMIT, reason: str | None = None
    ) -> Task:
        """Operator completes a pending, scheduled or running task by hand (P-MANUAL-1)."""
        return cast(Task, self._run(ops.complete_manually(task_id, output, reason)))

    def fail_task_manually(
        self,
        task_id: str,
        *,
        error: str,
        code: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> Task:
        """Operator fails a task permanently by hand, code `manual` unless given (P-MANUAL-1)."""
        return cast(Task, self._run(ops.fail_manually(task_id, error, code, details)))

    def list_task_attempts(self, task_id: str) -> AttemptList:
        return cast(AttemptList, self._run(ops.attempts(task_id)))

    # --- worker loop -----------------------------------------------------------------------

    def poll_task(
        self,
        *,
        handler_names: Sequence[str] | None = None,
        queue_name: str | None = None,
        worker_id: str | None = None,
        wait_ms: int | None = None,
        lease_ms: int | None = None,
    ) -> ClaimedTask | None:
        """Claim one task, or None when none arrived within wait_ms (204, P-POLL-1)."""
        call = ops.poll_one(handler_names, queue_name, worker_id, wait_ms, lease_ms)
        return cast("ClaimedTask | None", self._run(call))

    def poll_tasks(
        self,
        *,
        handler_names: Sequence[str] | None = None,
        queue_name: str | None = None,
        worker_id: str | None = None,
        wait_ms: int | None = None,
        lease_ms: int | None = None,
        batch_size: int | None = None,
    ) -> PollBatchResult:
        """Claim up to batch_size tasks (P-POLL-5)."""
        call = ops.poll_batch(handler_names, queue_name, worker_id, wait_ms, lease_ms, batch_size)
        return cast(PollBatchResult, self._run(call))

    def complete_task(
        self, task_id: str, *, output: Any = OMIT, lease_id: str | None = None
    ) -> TaskOutcome:
        """P-DONE-1, idempotent per lease (P-IDEM-1)."""
        return cast(TaskOutcome, self._run(ops.complete(task_id, output, lease_id)))

    def fail_task(
        self,
        task_id: str,
        *,
        error: str,
        retryable: bool = False,
        code: str | None = None,
        retry_after_ms: int | None = None,
        details: Mapping[str, Any] | None = None,
        checkpoint: Mapping[str, Any] | None = None,
        lease_id: str | None = None,
    ) -> TaskOutcome:
        """Report failure; `retryable=False` (the default) fails permanently (P-RETRY-5)."""
        call = ops.fail(
            task_id,
            error,
            retryable=retryable,
            code=code,
            retry_after_ms=retry_after_ms,
            details=details,
            checkpoint=checkpoint,
            lease_id=lease_id,
        )
        return cast(TaskOutcome, self._run(call))

    def heartbeat(
        self,
        task_id: str,
        *,
        lease_id: str | None = None,
        extend_ms: int | None = None,
        progress: Any = OMIT,
        checkpoint: Mapping[str, Any] | None = None,
    ) -> TaskLeaseStatus:
        """Extend one task's lease (P-LEASE-5), optionally saving progress and a checkpoint."""
        call = ops.heartbeat(task_id, lease_id, extend_ms, progress, checkpoint)
        return cast(TaskLeaseStatus, self._run(call))

    def release_task(
        self, task_id: str, *, lease_id: str | None = None, delay_ms: int | None = None
    ) -> TaskOutcome:
        """Give a claimed task back without spending an attempt (P-LEASE-7)."""
        return cast(TaskOutcome, self._run(ops.release(task_id, lease_id, delay_ms)))

    def complete_tasks(self, items: Sequence[Mapping[str, Any]]) -> BatchOutcome:
        """Batch complete, one outcome per item (P-BATCH-1)."""
        return cast(BatchOutcome, self._run(ops.complete_batch(items)))

    def fail_tasks(self, items: Sequence[Mapping[str, Any]]) -> BatchOutcome:
        """Batch fail, one outcome per item (P-BATCH-1)."""
        return cast(BatchOutcome, self._run(ops.fail_batch(items)))

    # --- workers ---------------------------------------------------------------------------

    def register_worker(self, worker_id: str, **fields: Any) -> Worker:
        """P-WORKER-1; fields as in `WorkerRegistration` (handlers, concurrency, sdk, ...)."""
        return cast(Worker, self._run(ops.register(worker_id, fields)))

    def heartbeat_worker(
        self,
        worker_id: str,
        *,
        active_task_ids: Sequence[str] = (),
        state: str | None = None,
        lease_ms: int | None = None,
    ) -> WorkerHeartbeatResult:
        """One heartbeat for the worker and every task it holds (P-WORKER-2)."""
        call = ops.heartbeat_worker_call(worker_id, active_task_ids, state, lease_ms)
        return cast(WorkerHeartbeatResult, self._run(call))

    def deregister_worker(self, worker_id: str) -> Worker:
        return cast(Worker, self._run(ops.deregister(worker_id)))

    def get_worker(self, worker_id: str) -> Worker:
        return cast(Worker, self._run(ops.get_worker_call(worker_id)))

    def list_workers(self, *, state: str | None = None) -> WorkerList:
        return cast(WorkerList, self._run(ops.list_workers_call(state)))

    def quiet_worker(self, worker_id: str) -> Worker:
        """Operator directive `quiet` (P-WORKER-4)."""
        return cast(Worker, self._run(ops.directive(worker_id, "quiet")))

    def resume_worker(self, worker_id: str) -> Worker:
        """Operator directive back to `running` (P-WORKER-4)."""
        return cast(Worker, self._run(ops.directive(worker_id, "resume")))

    def terminate_worker(self, worker_id: str) -> Worker:
        """Operator directive `terminate` (P-WORKER-4)."""
        return cast(Worker, self._run(ops.directive(worker_id, "terminate")))

    # --- queues and health -----------------------------------------------------------------

    def queue_stats(self, *, queue_name: str | None = None) -> QueueStatsList:
        """Depth and active pollers per queue and handler (P-OBS-1)."""
        return cast(QueueStatsList, self._run(ops.queues(queue_name)))

    def server_info(self) -> ServerInfo:
        return cast(ServerInfo, self._run(ops.info()))

    def health_live(self) -> HealthStatus:
        return cast(HealthStatus, self._run(ops.live()))

    def health_ready(self) -> HealthStatus:
        return cast(HealthStatus, self._run(ops.ready()))

    def metrics(self) -> str:
        return cast(str, self._run(ops.metrics()))
