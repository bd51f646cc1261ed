from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

T = TypeVar("T", bound="RunningLimit")


@_attrs_define
class RunningLimit:
    """
    Attributes:
        max_running (int | None): The cap; null removes it.
    """

    max_running: int | None

    def to_dict(self) -> dict[str, Any]:
        max_running: int | None
        max_running = self.max_running

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "max_running": max_running,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_max_running(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        max_running = _parse_max_running(d.pop("max_running", None))

        running_limit = cls(
            max_running=max_running,
        )

        return running_limit
