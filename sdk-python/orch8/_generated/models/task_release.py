from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_object import JsonObject


T = TypeVar("T", bound="TaskRelease")


@_attrs_define
class TaskRelease:
    """
    Attributes:
        lease_id (str | Unset):  Example: lease_01JDZ8Y7A1B2C3D4E5F6G7H8J9.
        delay_ms (int | Unset):  Default: 0.
        checkpoint (JsonObject | Unset): Any JSON object.
    """

    lease_id: str | Unset = UNSET
    delay_ms: int | Unset = 0
    checkpoint: JsonObject | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        lease_id = self.lease_id

        delay_ms = self.delay_ms

        checkpoint: dict[str, Any] | Unset = UNSET
        if not isinstance(self.checkpoint, Unset):
            checkpoint = self.checkpoint.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if lease_id is not UNSET:
            field_dict["lease_id"] = lease_id
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms
        if checkpoint is not UNSET:
            field_dict["checkpoint"] = checkpoint

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.json_object import JsonObject

        d = dict(src_dict)
        lease_id = d.pop("lease_id", UNSET)

        delay_ms = d.pop("delay_ms", UNSET)

        _checkpoint = d.pop("checkpoint", UNSET)
        checkpoint: JsonObject | Unset
        if isinstance(_checkpoint, Unset):
            checkpoint = UNSET
        else:
            checkpoint = JsonObject.from_dict(_checkpoint)

        task_release = cls(
            lease_id=lease_id,
            delay_ms=delay_ms,
            checkpoint=checkpoint,
        )

        return task_release
