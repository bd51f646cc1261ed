from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.blocked_reason import BlockedReason, check_blocked_reason

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
        unroutable (int): Pending tasks whose `required_labels` no live registered worker has (P-LABEL-3).
        held (int): Pending tasks held for a slot of their concurrency key or a token of their rate limit (P-KEY-1,
            P-RATE-1); counted in `pending` too.
        paused (bool): The queue is paused (P-CTRL-1).
        queue_max_running (int | None): The queue's running cap (P-CTRL-2).
        handler_max_running (int | None): The handler's running cap (P-CTRL-2).
        blocked (BlockedReason | None): Why pending tasks of this row are not being handed out, or null (P-OBS-4).
    """

    queue_name: str
    handler_name: str
    pending: int
    scheduled: int
    running: int
    failed: int
    oldest_pending_age_ms: int | None
    active_pollers: int
    unroutable: int
    held: int
    paused: bool
    queue_max_running: int | None
    handler_max_running: int | None
    blocked: BlockedReason | None
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

        unroutable = self.unroutable

        held = self.held

        paused = self.paused

        queue_max_running: int | None
        queue_max_running = self.queue_max_running

        handler_max_running: int | None
        handler_max_running = self.handler_max_running

        blocked: None | str
        if isinstance(self.blocked, str):
            blocked = self.blocked
        else:
            blocked = self.blocked

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
                "unroutable": unroutable,
                "held": held,
                "paused": paused,
                "queue_max_running": queue_max_running,
                "handler_max_running": handler_max_running,
                "blocked": blocked,
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
            d.pop("oldest_pending_age_ms", None)
        )

        active_pollers = d.pop("active_pollers")

        unroutable = d.pop("unroutable")

        held = d.pop("held")

        paused = d.pop("paused")

        def _parse_queue_max_running(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        queue_max_running = _parse_queue_max_running(d.pop("queue_max_running", None))

        def _parse_handler_max_running(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        handler_max_running = _parse_handler_max_running(
            d.pop("handler_max_running", None)
        )

        def _parse_blocked(data: object) -> BlockedReason | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                blocked_type_0 = check_blocked_reason(data)

                return blocked_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BlockedReason | None, data)

        blocked = _parse_blocked(d.pop("blocked", None))

        queue_stats = cls(
            queue_name=queue_name,
            handler_name=handler_name,
            pending=pending,
            scheduled=scheduled,
            running=running,
            failed=failed,
            oldest_pending_age_ms=oldest_pending_age_ms,
            active_pollers=active_pollers,
            unroutable=unroutable,
            held=held,
            paused=paused,
            queue_max_running=queue_max_running,
            handler_max_running=handler_max_running,
            blocked=blocked,
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
