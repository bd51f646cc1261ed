from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

T = TypeVar("T", bound="ActiveTaskStatus")


@_attrs_define
class ActiveTaskStatus:
    """
    Attributes:
        task_id (str):
        lease_expires_at (datetime.datetime | None):
        cancel_requested (bool): The task was cancelled; stop and report nothing.
        lease_lost (bool): The worker no longer holds this task; stop and report nothing.
    """

    task_id: str
    lease_expires_at: datetime.datetime | None
    cancel_requested: bool
    lease_lost: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        task_id = self.task_id

        lease_expires_at: None | str
        if isinstance(self.lease_expires_at, datetime.datetime):
            lease_expires_at = self.lease_expires_at.isoformat()
        else:
            lease_expires_at = self.lease_expires_at

        cancel_requested = self.cancel_requested

        lease_lost = self.lease_lost

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "task_id": task_id,
                "lease_expires_at": lease_expires_at,
                "cancel_requested": cancel_requested,
                "lease_lost": lease_lost,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        task_id = d.pop("task_id")

        def _parse_lease_expires_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                lease_expires_at_type_0 = isoparse(data)

                return lease_expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        lease_expires_at = _parse_lease_expires_at(d.pop("lease_expires_at", None))

        cancel_requested = d.pop("cancel_requested")

        lease_lost = d.pop("lease_lost")

        active_task_status = cls(
            task_id=task_id,
            lease_expires_at=lease_expires_at,
            cancel_requested=cancel_requested,
            lease_lost=lease_lost,
        )

        active_task_status.additional_properties = d
        return active_task_status

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
