from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

T = TypeVar("T", bound="TaskLeaseStatus")


@_attrs_define
class TaskLeaseStatus:
    """
    Attributes:
        task_id (str): Server-assigned id, `task_` + a time-ordered ULID. Example: task_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        lease_id (str):  Example: lease_01JDZ8Y7A1B2C3D4E5F6G7H8J9.
        lease_expires_at (datetime.datetime):
        cancel_requested (bool): Always false: a heartbeat on a cancelled task answers 409 `task_cancelled`
            instead (P-CANCEL-1). Kept for spec 1.0 clients; ignore it. The worker
            heartbeat's per-task `cancel_requested` keeps its meaning.
    """

    task_id: str
    lease_id: str
    lease_expires_at: datetime.datetime
    cancel_requested: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        task_id = self.task_id

        lease_id = self.lease_id

        lease_expires_at = self.lease_expires_at.isoformat()

        cancel_requested = self.cancel_requested

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "task_id": task_id,
                "lease_id": lease_id,
                "lease_expires_at": lease_expires_at,
                "cancel_requested": cancel_requested,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        task_id = d.pop("task_id")

        lease_id = d.pop("lease_id")

        lease_expires_at = isoparse(d.pop("lease_expires_at"))

        cancel_requested = d.pop("cancel_requested")

        task_lease_status = cls(
            task_id=task_id,
            lease_id=lease_id,
            lease_expires_at=lease_expires_at,
            cancel_requested=cancel_requested,
        )

        task_lease_status.additional_properties = d
        return task_lease_status

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
