from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

from ..models.task_status import TaskStatus, check_task_status
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_object import JsonObject
    from ..models.lease import Lease
    from ..models.retry_policy_settings import RetryPolicySettings
    from ..models.task_checkpoint_type_0 import TaskCheckpointType0
    from ..models.task_failure import TaskFailure
    from ..models.task_headers import TaskHeaders
    from ..models.task_required_labels import TaskRequiredLabels
    from ..models.task_waiting import TaskWaiting


T = TypeVar("T", bound="Task")


@_attrs_define
class Task:
    """
    Attributes:
        id (str): Server-assigned id, `task_` + a time-ordered ULID. Example: task_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        handler_name (str):
        queue_name (str):
        status (TaskStatus): See the state machine in docs/protocol.md.
        priority (int):
        params (JsonObject): Any JSON object.
        context (JsonObject): Any JSON object.
        headers (TaskHeaders):
        attempt (int): Attempts started so far.
        max_attempts (int):
        retry (RetryPolicySettings): The effective retry policy of a task.
        run_at (datetime.datetime): When the task became (or becomes) claimable.
        good_until (datetime.datetime | None):
        idempotency_key (None | str):
        created_at (datetime.datetime):
        updated_at (datetime.datetime):
        started_at (datetime.datetime | None): Start of the first attempt.
        finished_at (datetime.datetime | None): When the task reached a final state.
        next_attempt_at (datetime.datetime | None): For a task waiting out its retry backoff.
        worker_id (None | str): Worker of the latest attempt.
        lease (Lease | None): The current lease while `running`.
        output (Any): What the handler returned (any JSON value); null until completed.
        error (None | TaskFailure): The latest failure.
        checkpoint (None | TaskCheckpointType0): Latest checkpoint saved by a heartbeat or fail (P-CKPT-1).
        progress (Any): Latest progress reported by a heartbeat (any JSON value).
        cancel_reason (None | str):
        required_labels (TaskRequiredLabels): Worker labels a claimer must have (P-LABEL-1); `{}` for any worker.
        concurrency_key (None | str): Its concurrency key (P-KEY-1), or null.
        max_concurrency (int | None): Its key's limit as this task states it (P-KEY-1); null without a key.
        rate_limit_key (None | str): Its rate limit's key (P-RATE-1), or null.
        tenant (str | Unset): A tenant (P-TEN-1); `default` when no key or header names one. Example: team-a.
        waiting (TaskWaiting | Unset): What holds this task, or who runs it (P-OBS-7): in `GET /tasks/{task_id}` only.
            An
            instance carries the same shape in `GET /instances/{instance_id}` while it waits for
            a slot of its concurrency key (P-KEY-7, reason `concurrency_key`).
    """

    id: str
    handler_name: str
    queue_name: str
    status: TaskStatus
    priority: int
    params: JsonObject
    context: JsonObject
    headers: TaskHeaders
    attempt: int
    max_attempts: int
    retry: RetryPolicySettings
    run_at: datetime.datetime
    good_until: datetime.datetime | None
    idempotency_key: None | str
    created_at: datetime.datetime
    updated_at: datetime.datetime
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    next_attempt_at: datetime.datetime | None
    worker_id: None | str
    lease: Lease | None
    output: Any
    error: None | TaskFailure
    checkpoint: None | TaskCheckpointType0
    progress: Any
    cancel_reason: None | str
    required_labels: TaskRequiredLabels
    concurrency_key: None | str
    max_concurrency: int | None
    rate_limit_key: None | str
    tenant: str | Unset = UNSET
    waiting: TaskWaiting | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.lease import Lease
        from ..models.task_checkpoint_type_0 import TaskCheckpointType0
        from ..models.task_failure import TaskFailure

        id = self.id

        handler_name = self.handler_name

        queue_name = self.queue_name

        status: str = self.status

        priority = self.priority

        params = self.params.to_dict()

        context = self.context.to_dict()

        headers = self.headers.to_dict()

        attempt = self.attempt

        max_attempts = self.max_attempts

        retry = self.retry.to_dict()

        run_at = self.run_at.isoformat()

        good_until: None | str
        if isinstance(self.good_until, datetime.datetime):
            good_until = self.good_until.isoformat()
        else:
            good_until = self.good_until

        idempotency_key: None | str
        idempotency_key = self.idempotency_key

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        started_at: None | str
        if isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        next_attempt_at: None | str
        if isinstance(self.next_attempt_at, datetime.datetime):
            next_attempt_at = self.next_attempt_at.isoformat()
        else:
            next_attempt_at = self.next_attempt_at

        worker_id: None | str
        worker_id = self.worker_id

        lease: dict[str, Any] | None
        if isinstance(self.lease, Lease):
            lease = self.lease.to_dict()
        else:
            lease = self.lease

        output = self.output

        error: dict[str, Any] | None
        if isinstance(self.error, TaskFailure):
            error = self.error.to_dict()
        else:
            error = self.error

        checkpoint: dict[str, Any] | None
        if isinstance(self.checkpoint, TaskCheckpointType0):
            checkpoint = self.checkpoint.to_dict()
        else:
            checkpoint = self.checkpoint

        progress = self.progress

        cancel_reason: None | str
        cancel_reason = self.cancel_reason

        required_labels = self.required_labels.to_dict()

        concurrency_key: None | str
        concurrency_key = self.concurrency_key

        max_concurrency: int | None
        max_concurrency = self.max_concurrency

        rate_limit_key: None | str
        rate_limit_key = self.rate_limit_key

        tenant = self.tenant

        waiting: dict[str, Any] | Unset = UNSET
        if not isinstance(self.waiting, Unset):
            waiting = self.waiting.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "handler_name": handler_name,
                "queue_name": queue_name,
                "status": status,
                "priority": priority,
                "params": params,
                "context": context,
                "headers": headers,
                "attempt": attempt,
                "max_attempts": max_attempts,
                "retry": retry,
                "run_at": run_at,
                "good_until": good_until,
                "idempotency_key": idempotency_key,
                "created_at": created_at,
                "updated_at": updated_at,
                "started_at": started_at,
                "finished_at": finished_at,
                "next_attempt_at": next_attempt_at,
                "worker_id": worker_id,
                "lease": lease,
                "output": output,
                "error": error,
                "checkpoint": checkpoint,
                "progress": progress,
                "cancel_reason": cancel_reason,
                "required_labels": required_labels,
                "concurrency_key": concurrency_key,
                "max_concurrency": max_concurrency,
                "rate_limit_key": rate_limit_key,
            }
        )
        if tenant is not UNSET:
            field_dict["tenant"] = tenant
        if waiting is not UNSET:
            field_dict["waiting"] = waiting

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.json_object import JsonObject
        from ..models.lease import Lease
        from ..models.retry_policy_settings import RetryPolicySettings
        from ..models.task_checkpoint_type_0 import TaskCheckpointType0
        from ..models.task_failure import TaskFailure
        from ..models.task_headers import TaskHeaders
        from ..models.task_required_labels import TaskRequiredLabels
        from ..models.task_waiting import TaskWaiting

        d = dict(src_dict)
        id = d.pop("id")

        handler_name = d.pop("handler_name")

        queue_name = d.pop("queue_name")

        status = check_task_status(d.pop("status"))

        priority = d.pop("priority")

        params = JsonObject.from_dict(d.pop("params"))

        context = JsonObject.from_dict(d.pop("context"))

        headers = TaskHeaders.from_dict(d.pop("headers"))

        attempt = d.pop("attempt")

        max_attempts = d.pop("max_attempts")

        retry = RetryPolicySettings.from_dict(d.pop("retry"))

        run_at = isoparse(d.pop("run_at"))

        def _parse_good_until(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                good_until_type_0 = isoparse(data)

                return good_until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        good_until = _parse_good_until(d.pop("good_until", None))

        def _parse_idempotency_key(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", None))

        created_at = isoparse(d.pop("created_at"))

        updated_at = isoparse(d.pop("updated_at"))

        def _parse_started_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = isoparse(data)

                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        started_at = _parse_started_at(d.pop("started_at", None))

        def _parse_finished_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = isoparse(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at", None))

        def _parse_next_attempt_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_attempt_at_type_0 = isoparse(data)

                return next_attempt_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at", None))

        def _parse_worker_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        worker_id = _parse_worker_id(d.pop("worker_id", None))

        def _parse_lease(data: object) -> Lease | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                lease_type_0 = Lease.from_dict(data)

                return lease_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Lease | None, data)

        lease = _parse_lease(d.pop("lease", None))

        output = d.pop("output")

        def _parse_error(data: object) -> None | TaskFailure:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = TaskFailure.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskFailure, data)

        error = _parse_error(d.pop("error", None))

        def _parse_checkpoint(data: object) -> None | TaskCheckpointType0:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                checkpoint_type_0 = TaskCheckpointType0.from_dict(data)

                return checkpoint_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskCheckpointType0, data)

        checkpoint = _parse_checkpoint(d.pop("checkpoint", None))

        progress = d.pop("progress")

        def _parse_cancel_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        cancel_reason = _parse_cancel_reason(d.pop("cancel_reason", None))

        required_labels = TaskRequiredLabels.from_dict(d.pop("required_labels"))

        def _parse_concurrency_key(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        concurrency_key = _parse_concurrency_key(d.pop("concurrency_key", None))

        def _parse_max_concurrency(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        max_concurrency = _parse_max_concurrency(d.pop("max_concurrency", None))

        def _parse_rate_limit_key(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        rate_limit_key = _parse_rate_limit_key(d.pop("rate_limit_key", None))

        tenant = d.pop("tenant", UNSET)

        _waiting = d.pop("waiting", UNSET)
        waiting: TaskWaiting | Unset
        if isinstance(_waiting, Unset):
            waiting = UNSET
        else:
            waiting = TaskWaiting.from_dict(_waiting)

        task = cls(
            id=id,
            handler_name=handler_name,
            queue_name=queue_name,
            status=status,
            priority=priority,
            params=params,
            context=context,
            headers=headers,
            attempt=attempt,
            max_attempts=max_attempts,
            retry=retry,
            run_at=run_at,
            good_until=good_until,
            idempotency_key=idempotency_key,
            created_at=created_at,
            updated_at=updated_at,
            started_at=started_at,
            finished_at=finished_at,
            next_attempt_at=next_attempt_at,
            worker_id=worker_id,
            lease=lease,
            output=output,
            error=error,
            checkpoint=checkpoint,
            progress=progress,
            cancel_reason=cancel_reason,
            required_labels=required_labels,
            concurrency_key=concurrency_key,
            max_concurrency=max_concurrency,
            rate_limit_key=rate_limit_key,
            tenant=tenant,
            waiting=waiting,
        )

        task.additional_properties = d
        return task

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
