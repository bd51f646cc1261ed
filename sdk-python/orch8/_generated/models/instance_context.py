from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.json_object import JsonObject


T = TypeVar("T", bound="InstanceContext")


@_attrs_define
class InstanceContext:
    """`data` is the input; `config` the configuration given at start (P-WF-10).

    Attributes:
        data (JsonObject): Any JSON object.
        config (JsonObject): Any JSON object.
    """

    data: JsonObject
    config: JsonObject
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data.to_dict()

        config = self.config.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
                "config": config,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.json_object import JsonObject

        d = dict(src_dict)
        data = JsonObject.from_dict(d.pop("data"))

        config = JsonObject.from_dict(d.pop("config"))

        instance_context = cls(
            data=data,
            config=config,
        )

        instance_context.additional_properties = d
        return instance_context

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
