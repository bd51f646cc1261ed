from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.worker_directive import WorkerDirective, check_worker_directive

if TYPE_CHECKING:
    from ..models.active_task_status import ActiveTaskStatus


T = TypeVar("T", bound="WorkerHeartbeatResult")


@_attrs_define
class WorkerHeartbeatResult:
    """
    Attributes:
        directive (WorkerDirective): What the server wants the worker to do (P-WORKER-3).
        heartbeat_interval_ms (int):
        tasks (list[ActiveTaskStatus]):
    """

    directive: WorkerDirective
    heartbeat_interval_ms: int
    tasks: list[ActiveTaskStatus]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        directive: str = self.directive

        heartbeat_interval_ms = self.heartbeat_interval_ms

        tasks = []
        for tasks_item_data in self.tasks:
            tasks_item = tasks_item_data.to_dict()
            tasks.append(tasks_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "directive": directive,
                "heartbeat_interval_ms": heartbeat_interval_ms,
                "tasks": tasks,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.active_task_status import ActiveTaskStatus

        d = dict(src_dict)
        directive = check_worker_directive(d.pop("directive"))

        heartbeat_interval_ms = d.pop("heartbeat_interval_ms")

        tasks = []
        _tasks = d.pop("tasks")
        for tasks_item_data in _tasks:
            tasks_item = ActiveTaskStatus.from_dict(tasks_item_data)

            tasks.append(tasks_item)

        worker_heartbeat_result = cls(
            directive=directive,
            heartbeat_interval_ms=heartbeat_interval_ms,
            tasks=tasks,
        )

        worker_heartbeat_result.additional_properties = d
        return worker_heartbeat_result

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
