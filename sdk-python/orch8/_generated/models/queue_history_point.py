from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

T = TypeVar("T", bound="QueueHistoryPoint")


@_attrs_define
class QueueHistoryPoint:
    """
    Attributes:
        at (datetime.datetime): Start of the minute.
        enqueued (int):
        completed (int):
        failed (int): Attempts that failed (retried or final).
        depth (int | None): Pending tasks at the end of the minute (the latest sample for the current one); null when
            not sampled.
        wait_p50_ms (int | None): Median queue wait (ready to claimed) of the minute's claims; null without claims.
        wait_p95_ms (int | None):
    """

    at: datetime.datetime
    enqueued: int
    completed: int
    failed: int
    depth: int | None
    wait_p50_ms: int | None
    wait_p95_ms: int | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        enqueued = self.enqueued

        completed = self.completed

        failed = self.failed

        depth: int | None
        depth = self.depth

        wait_p50_ms: int | None
        wait_p50_ms = self.wait_p50_ms

        wait_p95_ms: int | None
        wait_p95_ms = self.wait_p95_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "enqueued": enqueued,
                "completed": completed,
                "failed": failed,
                "depth": depth,
                "wait_p50_ms": wait_p50_ms,
                "wait_p95_ms": wait_p95_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        at = isoparse(d.pop("at"))

        enqueued = d.pop("enqueued")

        completed = d.pop("completed")

        failed = d.pop("failed")

        def _parse_depth(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        depth = _parse_depth(d.pop("depth", None))

        def _parse_wait_p50_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        wait_p50_ms = _parse_wait_p50_ms(d.pop("wait_p50_ms", None))

        def _parse_wait_p95_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        wait_p95_ms = _parse_wait_p95_ms(d.pop("wait_p95_ms", None))

        queue_history_point = cls(
            at=at,
            enqueued=enqueued,
            completed=completed,
            failed=failed,
            depth=depth,
            wait_p50_ms=wait_p50_ms,
            wait_p95_ms=wait_p95_ms,
        )

        queue_history_point.additional_properties = d
        return queue_history_point

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
