from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.queue_stats import QueueStats


T = TypeVar("T", bound="QueueStatsList")


@_attrs_define
class QueueStatsList:
    """
    Attributes:
        queues (list[QueueStats]):
        generated_at (datetime.datetime):
    """

    queues: list[QueueStats]
    generated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        queues = []
        for queues_item_data in self.queues:
            queues_item = queues_item_data.to_dict()
            queues.append(queues_item)

        generated_at = self.generated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "queues": queues,
                "generated_at": generated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.queue_stats import QueueStats

        d = dict(src_dict)
        queues = []
        _queues = d.pop("queues")
        for queues_item_data in _queues:
            queues_item = QueueStats.from_dict(queues_item_data)

            queues.append(queues_item)

        generated_at = isoparse(d.pop("generated_at"))

        queue_stats_list = cls(
            queues=queues,
            generated_at=generated_at,
        )

        queue_stats_list.additional_properties = d
        return queue_stats_list

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
