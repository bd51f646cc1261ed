from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.claimed_task_checkpoint_type_0 import ClaimedTaskCheckpointType0
    from ..models.claimed_task_headers import ClaimedTaskHeaders
    from ..models.json_object import JsonObject
    from ..models.lease import Lease
    from ..models.task_metadata import TaskMetadata


T = TypeVar("T", bound="ClaimedTask")


@_attrs_define
class ClaimedTask:
    """
    Attributes:
        id (str): Server-assigned id, `task_` + a time-ordered ULID. Example: task_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        handler_name (str):
        queue_name (str):
        params (JsonObject): Any JSON object.
        context (JsonObject): Any JSON object.
        headers (ClaimedTaskHeaders):
        priority (int):
        attempt (int):
        max_attempts (int):
        lease (Lease): Exclusive right of one worker to finish one attempt of a task (P-LEASE-1).
        checkpoint (ClaimedTaskCheckpointType0 | None): Checkpoint saved by an earlier attempt (P-CKPT-1).
        good_until (datetime.datetime | None):
        created_at (datetime.datetime):
        ready_at (datetime.datetime): When this attempt became claimable: the later of `created_at` and the task's
            `run_at` (a delay, a schedule or a retry's backoff). Claim time minus `ready_at`
            is the schedule-to-start wait (P-TEL-4).
        metadata (TaskMetadata): Seed-compatible summary of the attempt.
    """

    id: str
    handler_name: str
    queue_name: str
    params: JsonObject
    context: JsonObject
    headers: ClaimedTaskHeaders
    priority: int
    attempt: int
    max_attempts: int
    lease: Lease
    checkpoint: ClaimedTaskCheckpointType0 | None
    good_until: datetime.datetime | None
    created_at: datetime.datetime
    ready_at: datetime.datetime
    metadata: TaskMetadata
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.claimed_task_checkpoint_type_0 import ClaimedTaskCheckpointType0

        id = self.id

        handler_name = self.handler_name

        queue_name = self.queue_name

        params = self.params.to_dict()

        context = self.context.to_dict()

        headers = self.headers.to_dict()

        priority = self.priority

        attempt = self.attempt

        max_attempts = self.max_attempts

        lease = self.lease.to_dict()

        checkpoint: dict[str, Any] | None
        if isinstance(self.checkpoint, ClaimedTaskCheckpointType0):
            checkpoint = self.checkpoint.to_dict()
        else:
            checkpoint = self.checkpoint

        good_until: None | str
        if isinstance(self.good_until, datetime.datetime):
            good_until = self.good_until.isoformat()
        else:
            good_until = self.good_until

        created_at = self.created_at.isoformat()

        ready_at = self.ready_at.isoformat()

        metadata = self.metadata.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "handler_name": handler_name,
                "queue_name": queue_name,
                "params": params,
                "context": context,
                "headers": headers,
                "priority": priority,
                "attempt": attempt,
                "max_attempts": max_attempts,
                "lease": lease,
                "checkpoint": checkpoint,
                "good_until": good_until,
                "created_at": created_at,
                "ready_at": ready_at,
                "metadata": metadata,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.claimed_task_checkpoint_type_0 import ClaimedTaskCheckpointType0
        from ..models.claimed_task_headers import ClaimedTaskHeaders
        from ..models.json_object import JsonObject
        from ..models.lease import Lease
        from ..models.task_metadata import TaskMetadata

        d = dict(src_dict)
        id = d.pop("id")

        handler_name = d.pop("handler_name")

        queue_name = d.pop("queue_name")

        params = JsonObject.from_dict(d.pop("params"))

        context = JsonObject.from_dict(d.pop("context"))

        headers = ClaimedTaskHeaders.from_dict(d.pop("headers"))

        priority = d.pop("priority")

        attempt = d.pop("attempt")

        max_attempts = d.pop("max_attempts")

        lease = Lease.from_dict(d.pop("lease"))

        def _parse_checkpoint(data: object) -> ClaimedTaskCheckpointType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                checkpoint_type_0 = ClaimedTaskCheckpointType0.from_dict(data)

                return checkpoint_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ClaimedTaskCheckpointType0 | None, data)

        checkpoint = _parse_checkpoint(d.pop("checkpoint", None))

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

        created_at = isoparse(d.pop("created_at"))

        ready_at = isoparse(d.pop("ready_at"))

        metadata = TaskMetadata.from_dict(d.pop("metadata"))

        claimed_task = cls(
            id=id,
            handler_name=handler_name,
            queue_name=queue_name,
            params=params,
            context=context,
            headers=headers,
            priority=priority,
            attempt=attempt,
            max_attempts=max_attempts,
            lease=lease,
            checkpoint=checkpoint,
            good_until=good_until,
            created_at=created_at,
            ready_at=ready_at,
            metadata=metadata,
        )

        claimed_task.additional_properties = d
        return claimed_task

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
