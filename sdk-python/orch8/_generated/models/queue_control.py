from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

T = TypeVar("T", bound="QueueControl")


@_attrs_define
class QueueControl:
    """Operator controls of one queue (P-CTRL-1, P-CTRL-2).

    Attributes:
        queue_name (str):
        paused (bool):
        paused_at (datetime.datetime | None):
        max_running (int | None): Most tasks of this queue running at once, across every replica; null for no cap.
        running (int): Tasks of this queue running now.
        updated_at (datetime.datetime | None): Last change; null if never set.
    """

    queue_name: str
    paused: bool
    paused_at: datetime.datetime | None
    max_running: int | None
    running: int
    updated_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        queue_name = self.queue_name

        paused = self.paused

        paused_at: None | str
        if isinstance(self.paused_at, datetime.datetime):
            paused_at = self.paused_at.isoformat()
        else:
            paused_at = self.paused_at

        max_running: int | None
        max_running = self.max_running

        running = self.running

        updated_at: None | str
        if isinstance(self.updated_at, datetime.datetime):
            updated_at = self.updated_at.isoformat()
        else:
            updated_at = self.updated_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "queue_name": queue_name,
                "paused": paused,
                "paused_at": paused_at,
                "max_running": max_running,
                "running": running,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        queue_name = d.pop("queue_name")

        paused = d.pop("paused")

        def _parse_paused_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                paused_at_type_0 = isoparse(data)

                return paused_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        paused_at = _parse_paused_at(d.pop("paused_at", None))

        def _parse_max_running(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        max_running = _parse_max_running(d.pop("max_running", None))

        running = d.pop("running")

        def _parse_updated_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                updated_at_type_0 = isoparse(data)

                return updated_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        updated_at = _parse_updated_at(d.pop("updated_at", None))

        queue_control = cls(
            queue_name=queue_name,
            paused=paused,
            paused_at=paused_at,
            max_running=max_running,
            running=running,
            updated_at=updated_at,
        )

        queue_control.additional_properties = d
        return queue_control

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
