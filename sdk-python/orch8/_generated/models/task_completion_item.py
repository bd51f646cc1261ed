from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="TaskCompletionItem")


@_attrs_define
class TaskCompletionItem:
    """
    Attributes:
        task_id (str): Server-assigned id, `task_` + a time-ordered ULID. Example: task_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        lease_id (str | Unset):  Example: lease_01JDZ8Y7A1B2C3D4E5F6G7H8J9.
        output (Any | Unset): The result, any JSON value.
    """

    task_id: str
    lease_id: str | Unset = UNSET
    output: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        task_id = self.task_id

        lease_id = self.lease_id

        output = self.output

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "task_id": task_id,
            }
        )
        if lease_id is not UNSET:
            field_dict["lease_id"] = lease_id
        if output is not UNSET:
            field_dict["output"] = output

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        task_id = d.pop("task_id")

        lease_id = d.pop("lease_id", UNSET)

        output = d.pop("output", UNSET)

        task_completion_item = cls(
            task_id=task_id,
            lease_id=lease_id,
            output=output,
        )

        return task_completion_item
