from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

T = TypeVar("T", bound="TaskMetadata")


@_attrs_define
class TaskMetadata:
    """Seed-compatible summary of the attempt.

    Attributes:
        attempt (int):
        max_attempts (int):
        created_at (datetime.datetime):
    """

    attempt: int
    max_attempts: int
    created_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        max_attempts = self.max_attempts

        created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "max_attempts": max_attempts,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        max_attempts = d.pop("max_attempts")

        created_at = isoparse(d.pop("created_at"))

        task_metadata = cls(
            attempt=attempt,
            max_attempts=max_attempts,
            created_at=created_at,
        )

        task_metadata.additional_properties = d
        return task_metadata

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
