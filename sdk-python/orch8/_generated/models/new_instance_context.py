from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_object import JsonObject


T = TypeVar("T", bound="NewInstanceContext")


@_attrs_define
class NewInstanceContext:
    """Orch8's form of the input (P-WF-10) - `data` is the input (give `input` or `context.data`, or both equal), `config`
    the instance configuration templates read as `context.config`.

        Attributes:
            data (JsonObject | Unset): Any JSON object.
            config (JsonObject | Unset): Any JSON object.
    """

    data: JsonObject | Unset = UNSET
    config: JsonObject | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] | Unset = UNSET
        if not isinstance(self.data, Unset):
            data = self.data.to_dict()

        config: dict[str, Any] | Unset = UNSET
        if not isinstance(self.config, Unset):
            config = self.config.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if data is not UNSET:
            field_dict["data"] = data
        if config is not UNSET:
            field_dict["config"] = config

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.json_object import JsonObject

        d = dict(src_dict)
        _data = d.pop("data", UNSET)
        data: JsonObject | Unset
        if isinstance(_data, Unset):
            data = UNSET
        else:
            data = JsonObject.from_dict(_data)

        _config = d.pop("config", UNSET)
        config: JsonObject | Unset
        if isinstance(_config, Unset):
            config = UNSET
        else:
            config = JsonObject.from_dict(_config)

        new_instance_context = cls(
            data=data,
            config=config,
        )

        return new_instance_context
