from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.new_instance import NewInstance


T = TypeVar("T", bound="NewInstanceBatch")


@_attrs_define
class NewInstanceBatch:
    """
    Attributes:
        instances (list[NewInstance]):
    """

    instances: list[NewInstance]

    def to_dict(self) -> dict[str, Any]:
        instances = []
        for instances_item_data in self.instances:
            instances_item = instances_item_data.to_dict()
            instances.append(instances_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "instances": instances,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.new_instance import NewInstance

        d = dict(src_dict)
        instances = []
        _instances = d.pop("instances")
        for instances_item_data in _instances:
            instances_item = NewInstance.from_dict(instances_item_data)

            instances.append(instances_item)

        new_instance_batch = cls(
            instances=instances,
        )

        return new_instance_batch
