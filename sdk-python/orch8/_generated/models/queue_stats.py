from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="QueueStats")


@_attrs_define
class QueueStats:
    """
    Attributes:
        queue_name (str):
        handler_name (str):
        pending (int):
        scheduled (int):
        running (int):
        failed (int):
        oldest_pending_age_ms (int | None):
        active_pollers (int): Workers that polled for this handler on this queue recently (P-OBS-1).
    """

    queue_name: str
    handler_name: str
    pending: int
    scheduled: int
    running: int
    failed: int
    oldest_pending_age_ms: int | None
    active_pollers: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        queue_name = self.queue_name

        handler_name = self.handler_name

        pending = self.pending

        scheduled = self.scheduled

        running = self.running

        failed = self.failed

        oldest_pending_age_ms: int | None
        oldest_pending_age_ms = self.oldest_pending_age_ms

        active_pollers = self.active_pollers

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "queue_name": queue_name,
                "handler_name": handler_name,
                "pending": pending,
                "scheduled": scheduled,
                "running": running,
                "failed": failed,
                "oldest_pending_age_ms": oldest_pending_age_ms,
                "active_pollers": active_pollers,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        queue_name = d.pop("queue_name")

        handler_name = d.pop("handler_name")

        pending = d.pop("pending")

        scheduled = d.pop("scheduled")

        running = d.pop("running")

        failed = d.pop("failed")

        def _parse_oldest_pending_age_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        oldest_pending_age_ms = _parse_oldest_pending_age_ms(
            d.pop("oldest_pending_age_ms")
        )

        active_pollers = d.pop("active_pollers")

        queue_stats = cls(
            queue_name=queue_name,
            handler_name=handler_name,
            pending=pending,
            scheduled=scheduled,
            running=running,
            failed=failed,
            oldest_pending_age_ms=oldest_pending_age_ms,
            active_pollers=active_pollers,
        )

        queue_stats.additional_properties = d
        return queue_stats

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
