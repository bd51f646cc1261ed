from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

T = TypeVar("T", bound="HandlerControl")


@_attrs_define
class HandlerControl:
    """Operator controls of one handler (P-CTRL-2).

    Attributes:
        handler_name (str):
        max_running (int | None): Most tasks of this handler running at once (all queues, every replica); null for no
            cap.
        running (int):
        updated_at (datetime.datetime | None):
    """

    handler_name: str
    max_running: int | None
    running: int
    updated_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        handler_name = self.handler_name

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
                "handler_name": handler_name,
                "max_running": max_running,
                "running": running,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        handler_name = d.pop("handler_name")

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

        handler_control = cls(
            handler_name=handler_name,
            max_running=max_running,
            running=running,
            updated_at=updated_at,
        )

        handler_control.additional_properties = d
        return handler_control

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
