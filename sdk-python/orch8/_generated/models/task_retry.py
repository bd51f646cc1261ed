from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="TaskRetry")


@_attrs_define
class TaskRetry:
    """
    Attributes:
        delay_ms (int | Unset):  Default: 0.
        max_attempts (int | Unset): Fresh attempt budget; defaults to the task's retry policy.
    """

    delay_ms: int | Unset = 0
    max_attempts: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        delay_ms = self.delay_ms

        max_attempts = self.max_attempts

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms
        if max_attempts is not UNSET:
            field_dict["max_attempts"] = max_attempts

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        delay_ms = d.pop("delay_ms", UNSET)

        max_attempts = d.pop("max_attempts", UNSET)

        task_retry = cls(
            delay_ms=delay_ms,
            max_attempts=max_attempts,
        )

        return task_retry
