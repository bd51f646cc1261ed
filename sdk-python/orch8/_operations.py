"""One `Call` builder per contract operation, shared by Orch8Client and AsyncOrch8Client.

Each builder turns keyword arguments into the generated request model and records whether
the call is safe to repeat (P-SDK-2) and its timeout (P-SDK-1).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._generated.api.health import get_liveness, get_metrics, get_readiness, get_server_info
from ._generated.api.queues import get_queue_stats
from ._generated.api.tasks import (
    cancel_task,
    complete_task_manually,
    enqueue_task,
    enqueue_tasks,
    fail_task_manually,
    get_task,
    list_task_attempts,
    list_tasks,
    retry_task,
)
from ._generated.api.worker_tasks import (
    complete_task,
    complete_tasks,
    fail_task,
    fail_tasks,
    heartbeat_task,
    poll_task,
    poll_tasks,
    release_task,
)
from ._generated.api.workers import (
    deregister_worker,
    get_worker,
    heartbeat_worker,
    list_workers,
    quiet_worker,
    register_worker,
    resume_worker,
    terminate_worker,
)
from ._generated.models import (
    ManualCompletion,
    ManualFailure,
    NewTask,
    NewTaskBatch,
    PollBatchOptions,
    PollOptions,
    TaskCancellation,
    TaskCompletion,
    TaskCompletionBatch,
    TaskFailureBatch,
    TaskFailureReport,
    TaskHeartbeat,
    TaskRelease,
    TaskRetry,
    WorkerHeartbeat,
    WorkerRegistration,
)
from ._generated.types import UNSET
from ._http import Call, long_poll_timeout

# Marks an argument the caller did not give, where None would be a real JSON null.
OMIT: Any = UNSET


def _body(**fields: Any) -> dict[str, Any]:
    """The JSON body: fields given as None or OMIT are left out."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None or value is UNSET:
            continue
        if isinstance(value, datetime.datetime):
            value = value.isoformat()
        out[name] = value
    return out


def _task_body(spec: Mapping[str, Any]) -> dict[str, Any]:
    return _body(**spec)


# --- tasks (producer and operator) ---------------------------------------------------------


def enqueue(spec: Mapping[str, Any]) -> Call:
    """P-TASK-1; repeated automatically only with an idempotency_key (P-TASK-3, P-SDK-2)."""
    body = NewTask.from_dict(_task_body(spec))
    return Call(enqueue_task, {"body": body}, safe=bool(spec.get("idempotency_key")))


def enqueue_batch(specs: Sequence[Mapping[str, Any]]) -> Call:
    """P-TASK-2; safe to repeat only when every task carries an idempotency_key."""
    tasks = [_task_body(s) for s in specs]
    safe = bool(tasks) and all(t.get("idempotency_key") for t in tasks)
    return Call(enqueue_tasks, {"body": NewTaskBatch.from_dict({"tasks": tasks})}, safe=safe)


def get(task_id: str) -> Call:
    return Call(get_task, {"task_id": task_id}, safe=True)


def list_(
    *,
    status: Iterable[str] | None,
    handler_name: str | None,
    queue_name: str | None,
    worker_id: str | None,
    created_after: datetime.datetime | None,
    created_before: datetime.datetime | None,
    limit: int | None,
    cursor: str | None,
) -> Call:
    args: dict[str, Any] = {
        "status": list(status) if status is not None else UNSET,
        "handler_name": handler_name if handler_name is not None else UNSET,
        "queue_name": queue_name if queue_name is not None else UNSET,
        "worker_id": worker_id if worker_id is not None else UNSET,
        "created_after": created_after if created_after is not None else UNSET,
        "created_before": created_before if created_before is not None else UNSET,
        "limit": limit if limit is not None else UNSET,
        "cursor": cursor if cursor is not None else UNSET,
    }
    return Call(list_tasks, args, safe=True)


def cancel(task_id: str, reason: str | None) -> Call:
    body = TaskCancellation.from_dict(_body(reason=reason))
    return Call(cancel_task, {"task_id": task_id, "body": body}, safe=False)


def retry(task_id: str, delay_ms: int | None, max_attempts: int | None) -> Call:
    body = TaskRetry.from_dict(_body(delay_ms=delay_ms, max_attempts=max_attempts))
    return Call(retry_task, {"task_id": task_id, "body": body}, safe=False)


def complete_manually(task_id: str, output: Any, reason: str | None) -> Call:
    """P-MANUAL-1; a POST outside P-SDK-2's list, so not retried."""
    fields = _body(reason=reason)
    if output is not UNSET:
        fields["output"] = output
    body = ManualCompletion.from_dict(fields)
    return Call(complete_task_manually, {"task_id": task_id, "body": body}, safe=False)


def fail_manually(
    task_id: str, error: str, code: str | None, details: Mapping[str, Any] | None
) -> Call:
    """P-MANUAL-1: a permanent failure, code `manual` unless given; not retried."""
    fields = {
        "error": error,
        **_body(code=code, details=dict(details) if details is not None else None),
    }
    body = ManualFailure.from_dict(fields)
    return Call(fail_task_manually, {"task_id": task_id, "body": body}, safe=False)


def attempts(task_id: str) -> Call:
    return Call(list_task_attempts, {"task_id": task_id}, safe=True)


# --- the worker loop -----------------------------------------------------------------------


def poll_one(
    handler_names: Sequence[str] | None,
    queue_name: str | None,
    worker_id: str | None,
    wait_ms: int | None,
    lease_ms: int | None,
) -> Call:
    """P-POLL-1; never retried by the client (a repeat could claim a second task)."""
    body = PollOptions.from_dict(
        _body(
            handler_names=list(handler_names) if handler_names is not None else None,
            queue_name=queue_name,
            worker_id=worker_id,
            wait_ms=wait_ms,
            lease_ms=lease_ms,
        )
    )
    return Call(poll_task, {"body": body}, safe=False, timeout=long_poll_timeout(wait_ms))


def poll_batch(
    handler_names: Sequence[str] | None,
    queue_name: str | None,
    worker_id: str | None,
    wait_ms: int | None,
    lease_ms: int | None,
    batch_size: int | None,
) -> Call:
    """P-POLL-5; never retried by the client."""
    body = PollBatchOptions.from_dict(
        _body(
            handler_names=list(handler_names) if handler_names is not None else None,
            queue_name=queue_name,
            worker_id=worker_id,
            wait_ms=wait_ms,
            lease_ms=lease_ms,
            batch_size=batch_size,
        )
    )
    return Call(poll_tasks, {"body": body}, safe=False, timeout=long_poll_timeout(wait_ms))


def complete(task_id: str, output: Any, lease_id: str | None) -> Call:
    """P-DONE-1; idempotent per lease (P-IDEM-1), so retried."""
    fields: dict[str, Any] = _body(lease_id=lease_id)
    if output is not UNSET:
        fields["output"] = output  # None is a real JSON null output
    body = TaskCompletion.from_dict(fields)
    return Call(complete_task, {"task_id": task_id, "body": body}, safe=True)


def fail(
    task_id: str,
    error: str,
    *,
    retryable: bool,
    code: str | None,
    retry_after_ms: int | None,
    details: Mapping[str, Any] | None,
    checkpoint: Mapping[str, Any] | None,
    lease_id: str | None,
) -> Call:
    """P-RETRY-1..5; idempotent per lease (P-IDEM-1), so retried."""
    body = TaskFailureReport.from_dict(
        {
            "error": error,
            "retryable": retryable,
            **_body(
                code=code,
                retry_after_ms=retry_after_ms,
                details=dict(details) if details is not None else None,
                checkpoint=dict(checkpoint) if checkpoint is not None else None,
                lease_id=lease_id,
            ),
        }
    )
    return Call(fail_task, {"task_id": task_id, "body": body}, safe=True)


def heartbeat(
    task_id: str,
    lease_id: str | None,
    extend_ms: int | None,
    progress: Any,
    checkpoint: Mapping[str, Any] | None,
) -> Call:
    """P-LEASE-5; safe to repeat."""
    fields = _body(
        lease_id=lease_id,
        extend_ms=extend_ms,
        checkpoint=dict(checkpoint) if checkpoint is not None else None,
    )
    if progress is not UNSET:
        fields["progress"] = progress
    body = TaskHeartbeat.from_dict(fields)
    return Call(heartbeat_task, {"task_id": task_id, "body": body}, safe=True)


def release(task_id: str, lease_id: str | None, delay_ms: int | None) -> Call:
    """P-LEASE-7; safe to repeat."""
    body = TaskRelease.from_dict(_body(lease_id=lease_id, delay_ms=delay_ms))
    return Call(release_task, {"task_id": task_id, "body": body}, safe=True)


def complete_batch(items: Sequence[Mapping[str, Any]]) -> Call:
    """P-BATCH-1; each item is idempotent per lease."""
    body = TaskCompletionBatch.from_dict({"items": [dict(i) for i in items]})
    return Call(complete_tasks, {"body": body}, safe=True)


def fail_batch(items: Sequence[Mapping[str, Any]]) -> Call:
    """P-BATCH-1; each item is idempotent per lease."""
    body = TaskFailureBatch.from_dict({"items": [dict(i) for i in items]})
    return Call(fail_tasks, {"body": body}, safe=True)


# --- workers -------------------------------------------------------------------------------


def register(worker_id: str, fields: Mapping[str, Any]) -> Call:
    """P-WORKER-1; idempotent on worker_id."""
    body = WorkerRegistration.from_dict({"worker_id": worker_id, **_body(**fields)})
    return Call(register_worker, {"body": body}, safe=True)


def heartbeat_worker_call(
    worker_id: str, active_task_ids: Sequence[str], state: str | None, lease_ms: int | None
) -> Call:
    """P-WORKER-2; safe to repeat."""
    body = WorkerHeartbeat.from_dict(
        {"active_task_ids": list(active_task_ids), **_body(state=state, lease_ms=lease_ms)}
    )
    return Call(heartbeat_worker, {"worker_id": worker_id, "body": body}, safe=True)


def deregister(worker_id: str) -> Call:
    return Call(deregister_worker, {"worker_id": worker_id}, safe=True)


def get_worker_call(worker_id: str) -> Call:
    return Call(get_worker, {"worker_id": worker_id}, safe=True)


def list_workers_call(state: str | None) -> Call:
    return Call(list_workers, {"state": state if state is not None else UNSET}, safe=True)


def directive(worker_id: str, which: str) -> Call:
    """P-WORKER-4 operator directives; POSTs outside P-SDK-2's list, so not retried."""
    endpoint = {"quiet": quiet_worker, "resume": resume_worker, "terminate": terminate_worker}
    return Call(endpoint[which], {"worker_id": worker_id}, safe=False)


# --- queues and health ---------------------------------------------------------------------


def queues(queue_name: str | None) -> Call:
    args = {"queue_name": queue_name if queue_name is not None else UNSET}
    return Call(get_queue_stats, args, safe=True)


def info() -> Call:
    return Call(get_server_info, {}, safe=True)


def live() -> Call:
    return Call(get_liveness, {}, safe=True)


def ready() -> Call:
    return Call(get_readiness, {}, safe=True)


def metrics() -> Call:
    return Call(get_metrics, {}, safe=True)
