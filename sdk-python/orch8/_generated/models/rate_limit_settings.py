from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="RateLimitSettings")


@_attrs_define
class RateLimitSettings:
    """
    Attributes:
        limit (int): Tasks that may start per period.
        period_ms (int):
        burst (int | Unset): The most tasks that may start at once (the bucket's size); default `limit`.
    """

    limit: int
    period_ms: int
    burst: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        limit = self.limit

        period_ms = self.period_ms

        burst = self.burst

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "limit": limit,
                "period_ms": period_ms,
            }
        )
        if burst is not UNSET:
            field_dict["burst"] = burst

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        limit = d.pop("limit")

        period_ms = d.pop("period_ms")

        burst = d.pop("burst", UNSET)

        rate_limit_settings = cls(
            limit=limit,
            period_ms=period_ms,
            burst=burst,
        )

        return rate_limit_settings
