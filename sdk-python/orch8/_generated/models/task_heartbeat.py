from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_object import JsonObject


T = TypeVar("T", bound="TaskHeartbeat")


@_attrs_define
class TaskHeartbeat:
    """
    Attributes:
        lease_id (str | Unset):  Example: lease_01JDZ8Y7A1B2C3D4E5F6G7H8J9.
        lease_ms (int | Unset): New lease length from now; the lease's own length when omitted (P-LEASE-5).
        extend_ms (int | Unset): Deprecated alias of `lease_ms` (spec 1.0 name). When both are given with
            different values the answer is 422 `validation_error` pointing at `/extend_ms`.
        progress (Any | Unset): Progress report, any JSON value.
        checkpoint (JsonObject | Unset): Any JSON object.
    """

    lease_id: str | Unset = UNSET
    lease_ms: int | Unset = UNSET
    extend_ms: int | Unset = UNSET
    progress: Any | Unset = UNSET
    checkpoint: JsonObject | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        lease_id = self.lease_id

        lease_ms = self.lease_ms

        extend_ms = self.extend_ms

        progress = self.progress

        checkpoint: dict[str, Any] | Unset = UNSET
        if not isinstance(self.checkpoint, Unset):
            checkpoint = self.checkpoint.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if lease_id is not UNSET:
            field_dict["lease_id"] = lease_id
        if lease_ms is not UNSET:
            field_dict["lease_ms"] = lease_ms
        if extend_ms is not UNSET:
            field_dict["extend_ms"] = extend_ms
        if progress is not UNSET:
            field_dict["progress"] = progress
        if checkpoint is not UNSET:
            field_dict["checkpoint"] = checkpoint

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.json_object import JsonObject

        d = dict(src_dict)
        lease_id = d.pop("lease_id", UNSET)

        lease_ms = d.pop("lease_ms", UNSET)

        extend_ms = d.pop("extend_ms", UNSET)

        progress = d.pop("progress", UNSET)

        _checkpoint = d.pop("checkpoint", UNSET)
        checkpoint: JsonObject | Unset
        if isinstance(_checkpoint, Unset):
            checkpoint = UNSET
        else:
            checkpoint = JsonObject.from_dict(_checkpoint)

        task_heartbeat = cls(
            lease_id=lease_id,
            lease_ms=lease_ms,
            extend_ms=extend_ms,
            progress=progress,
            checkpoint=checkpoint,
        )

        return task_heartbeat
