from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.rate_limit import RateLimit


T = TypeVar("T", bound="RateLimitList")


@_attrs_define
class RateLimitList:
    """
    Attributes:
        rate_limits (list[RateLimit]):
    """

    rate_limits: list[RateLimit]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        rate_limits = []
        for rate_limits_item_data in self.rate_limits:
            rate_limits_item = rate_limits_item_data.to_dict()
            rate_limits.append(rate_limits_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "rate_limits": rate_limits,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.rate_limit import RateLimit

        d = dict(src_dict)
        rate_limits = []
        _rate_limits = d.pop("rate_limits")
        for rate_limits_item_data in _rate_limits:
            rate_limits_item = RateLimit.from_dict(rate_limits_item_data)

            rate_limits.append(rate_limits_item)

        rate_limit_list = cls(
            rate_limits=rate_limits,
        )

        rate_limit_list.additional_properties = d
        return rate_limit_list

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
