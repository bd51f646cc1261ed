from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

from ..models.clock_mode import ClockMode, check_clock_mode

T = TypeVar("T", bound="Clock")


@_attrs_define
class Clock:
    """
    Attributes:
        mode (ClockMode): `test` on a server started with `--test-clock` (P-CLOCK-1).
        now (datetime.datetime): The time the server's rules read.
        next_timer_at (datetime.datetime | None): The earliest scheduled task, `good_until` or workflow timer still to
            fire (P-CLOCK-3); leases and worker liveness are not counted. Null when none.
        advanced_ms (int): How far this call moved the clock (0 for GET).
    """

    mode: ClockMode
    now: datetime.datetime
    next_timer_at: datetime.datetime | None
    advanced_ms: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        mode: str = self.mode

        now = self.now.isoformat()

        next_timer_at: None | str
        if isinstance(self.next_timer_at, datetime.datetime):
            next_timer_at = self.next_timer_at.isoformat()
        else:
            next_timer_at = self.next_timer_at

        advanced_ms = self.advanced_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "mode": mode,
                "now": now,
                "next_timer_at": next_timer_at,
                "advanced_ms": advanced_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        mode = check_clock_mode(d.pop("mode"))

        now = isoparse(d.pop("now"))

        def _parse_next_timer_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_timer_at_type_0 = isoparse(data)

                return next_timer_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        next_timer_at = _parse_next_timer_at(d.pop("next_timer_at", None))

        advanced_ms = d.pop("advanced_ms")

        clock = cls(
            mode=mode,
            now=now,
            next_timer_at=next_timer_at,
            advanced_ms=advanced_ms,
        )

        clock.additional_properties = d
        return clock

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
