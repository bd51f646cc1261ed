from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.handler_control import HandlerControl
    from ..models.queue_control import QueueControl
    from ..models.queue_stats import QueueStats


T = TypeVar("T", bound="QueueStatsList")


@_attrs_define
class QueueStatsList:
    """
    Attributes:
        queues (list[QueueStats]):
        queue_controls (list[QueueControl]): Every queue that is paused or capped, with or without tasks.
        handler_controls (list[HandlerControl]): Every handler that is capped.
        generated_at (datetime.datetime):
    """

    queues: list[QueueStats]
    queue_controls: list[QueueControl]
    handler_controls: list[HandlerControl]
    generated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        queues = []
        for queues_item_data in self.queues:
            queues_item = queues_item_data.to_dict()
            queues.append(queues_item)

        queue_controls = []
        for queue_controls_item_data in self.queue_controls:
            queue_controls_item = queue_controls_item_data.to_dict()
            queue_controls.append(queue_controls_item)

        handler_controls = []
        for handler_controls_item_data in self.handler_controls:
            handler_controls_item = handler_controls_item_data.to_dict()
            handler_controls.append(handler_controls_item)

        generated_at = self.generated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "queues": queues,
                "queue_controls": queue_controls,
                "handler_controls": handler_controls,
                "generated_at": generated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.handler_control import HandlerControl
        from ..models.queue_control import QueueControl
        from ..models.queue_stats import QueueStats

        d = dict(src_dict)
        queues = []
        _queues = d.pop("queues")
        for queues_item_data in _queues:
            queues_item = QueueStats.from_dict(queues_item_data)

            queues.append(queues_item)

        queue_controls = []
        _queue_controls = d.pop("queue_controls")
        for queue_controls_item_data in _queue_controls:
            queue_controls_item = QueueControl.from_dict(queue_controls_item_data)

            queue_controls.append(queue_controls_item)

        handler_controls = []
        _handler_controls = d.pop("handler_controls")
        for handler_controls_item_data in _handler_controls:
            handler_controls_item = HandlerControl.from_dict(handler_controls_item_data)

            handler_controls.append(handler_controls_item)

        generated_at = isoparse(d.pop("generated_at"))

        queue_stats_list = cls(
            queues=queues,
            queue_controls=queue_controls,
            handler_controls=handler_controls,
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
