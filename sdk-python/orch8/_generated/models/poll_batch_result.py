from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.claimed_task import ClaimedTask


T = TypeVar("T", bound="PollBatchResult")


@_attrs_define
class PollBatchResult:
    """
    Attributes:
        tasks (list[ClaimedTask]):
        next_poll_after_ms (int): How long to wait before the next poll; 0 means poll again now.
    """

    tasks: list[ClaimedTask]
    next_poll_after_ms: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        tasks = []
        for tasks_item_data in self.tasks:
            tasks_item = tasks_item_data.to_dict()
            tasks.append(tasks_item)

        next_poll_after_ms = self.next_poll_after_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "tasks": tasks,
                "next_poll_after_ms": next_poll_after_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.claimed_task import ClaimedTask

        d = dict(src_dict)
        tasks = []
        _tasks = d.pop("tasks")
        for tasks_item_data in _tasks:
            tasks_item = ClaimedTask.from_dict(tasks_item_data)

            tasks.append(tasks_item)

        next_poll_after_ms = d.pop("next_poll_after_ms")

        poll_batch_result = cls(
            tasks=tasks,
            next_poll_after_ms=next_poll_after_ms,
        )

        poll_batch_result.additional_properties = d
        return poll_batch_result

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
