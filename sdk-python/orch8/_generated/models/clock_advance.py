from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="ClockAdvance")


@_attrs_define
class ClockAdvance:
    """Exactly one of `by_ms` and `to_next_timer`.

    Attributes:
        by_ms (int | Unset): Milliseconds to move forward (at most 100 years).
        to_next_timer (bool | Unset): Move to `next_timer_at` (no move when there is none).
    """

    by_ms: int | Unset = UNSET
    to_next_timer: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        by_ms = self.by_ms

        to_next_timer = self.to_next_timer

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if by_ms is not UNSET:
            field_dict["by_ms"] = by_ms
        if to_next_timer is not UNSET:
            field_dict["to_next_timer"] = to_next_timer

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        by_ms = d.pop("by_ms", UNSET)

        to_next_timer = d.pop("to_next_timer", UNSET)

        clock_advance = cls(
            by_ms=by_ms,
            to_next_timer=to_next_timer,
        )

        return clock_advance
