from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.queue_history_point import QueueHistoryPoint


T = TypeVar("T", bound="QueueHistory")


@_attrs_define
class QueueHistory:
    """The queue's last minutes, one point per minute, oldest first (P-OBS-5).

    Attributes:
        queue_name (str):
        bucket_ms (int): Width of one point (60000).
        generated_at (datetime.datetime):
        points (list[QueueHistoryPoint]):
    """

    queue_name: str
    bucket_ms: int
    generated_at: datetime.datetime
    points: list[QueueHistoryPoint]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        queue_name = self.queue_name

        bucket_ms = self.bucket_ms

        generated_at = self.generated_at.isoformat()

        points = []
        for points_item_data in self.points:
            points_item = points_item_data.to_dict()
            points.append(points_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "queue_name": queue_name,
                "bucket_ms": bucket_ms,
                "generated_at": generated_at,
                "points": points,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.queue_history_point import QueueHistoryPoint

        d = dict(src_dict)
        queue_name = d.pop("queue_name")

        bucket_ms = d.pop("bucket_ms")

        generated_at = isoparse(d.pop("generated_at"))

        points = []
        _points = d.pop("points")
        for points_item_data in _points:
            points_item = QueueHistoryPoint.from_dict(points_item_data)

            points.append(points_item)

        queue_history = cls(
            queue_name=queue_name,
            bucket_ms=bucket_ms,
            generated_at=generated_at,
            points=points,
        )

        queue_history.additional_properties = d
        return queue_history

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
