from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.new_task import NewTask


T = TypeVar("T", bound="NewTaskBatch")


@_attrs_define
class NewTaskBatch:
    """
    Attributes:
        tasks (list[NewTask]):
    """

    tasks: list[NewTask]

    def to_dict(self) -> dict[str, Any]:
        tasks = []
        for tasks_item_data in self.tasks:
            tasks_item = tasks_item_data.to_dict()
            tasks.append(tasks_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "tasks": tasks,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.new_task import NewTask

        d = dict(src_dict)
        tasks = []
        _tasks = d.pop("tasks")
        for tasks_item_data in _tasks:
            tasks_item = NewTask.from_dict(tasks_item_data)

            tasks.append(tasks_item)

        new_task_batch = cls(
            tasks=tasks,
        )

        return new_task_batch
