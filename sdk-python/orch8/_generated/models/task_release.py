from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="TaskRelease")


@_attrs_define
class TaskRelease:
    """
    Attributes:
        lease_id (str | Unset):  Example: lease_01JDZ8Y7A1B2C3D4E5F6G7H8J9.
        delay_ms (int | Unset):  Default: 0.
    """

    lease_id: str | Unset = UNSET
    delay_ms: int | Unset = 0

    def to_dict(self) -> dict[str, Any]:
        lease_id = self.lease_id

        delay_ms = self.delay_ms

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if lease_id is not UNSET:
            field_dict["lease_id"] = lease_id
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        lease_id = d.pop("lease_id", UNSET)

        delay_ms = d.pop("delay_ms", UNSET)

        task_release = cls(
            lease_id=lease_id,
            delay_ms=delay_ms,
        )

        return task_release
