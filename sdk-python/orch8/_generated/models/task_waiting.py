from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="TaskWaiting")


@_attrs_define
class TaskWaiting:
    """What holds this task, or who runs it (P-OBS-7): in `GET /tasks/{task_id}` only. An
    instance carries the same shape in `GET /instances/{instance_id}` while it waits for
    a slot of its concurrency key (P-KEY-7, reason `concurrency_key`).

        Attributes:
            reason (str): `scheduled` or `retry_backoff` (claimable at `until`), `paused` (its queue),
                `queue_cap` or `handler_cap` (`running` tasks at the `cap`), `unroutable` (no
                live worker has its required labels), `no_poller` (no worker polls its handler
                on its queue now), `claimable` (`pollers` workers poll for it: it is handed out
                as their slots free), `concurrency_key` (held: `running` is how many tasks of its
                key hold a slot, claimable or running, of the `cap`, P-KEY-1), `rate_limited`
                (waiting for a token of its rate limit, the next at `until`, P-RATE-1), `running` (`worker_id` holds its lease),
                `finished`. More reasons may come: show an unknown one by its `detail`.
                 Example: handler_cap.
            detail (str): The reason as a sentence, with its numbers. Example: handler resize_image runs 4 tasks, its cap
                (P-CTRL-2).
            until (datetime.datetime | None | Unset):
            running (int | None | Unset):
            cap (int | None | Unset):
            pollers (int | None | Unset):
            worker_id (None | str | Unset):
            last_heartbeat_at (datetime.datetime | None | Unset):
            lease_expires_at (datetime.datetime | None | Unset):
    """

    reason: str
    detail: str
    until: datetime.datetime | None | Unset = UNSET
    running: int | None | Unset = UNSET
    cap: int | None | Unset = UNSET
    pollers: int | None | Unset = UNSET
    worker_id: None | str | Unset = UNSET
    last_heartbeat_at: datetime.datetime | None | Unset = UNSET
    lease_expires_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        reason = self.reason

        detail = self.detail

        until: None | str | Unset
        if isinstance(self.until, Unset):
            until = UNSET
        elif isinstance(self.until, datetime.datetime):
            until = self.until.isoformat()
        else:
            until = self.until

        running: int | None | Unset
        if isinstance(self.running, Unset):
            running = UNSET
        else:
            running = self.running

        cap: int | None | Unset
        if isinstance(self.cap, Unset):
            cap = UNSET
        else:
            cap = self.cap

        pollers: int | None | Unset
        if isinstance(self.pollers, Unset):
            pollers = UNSET
        else:
            pollers = self.pollers

        worker_id: None | str | Unset
        if isinstance(self.worker_id, Unset):
            worker_id = UNSET
        else:
            worker_id = self.worker_id

        last_heartbeat_at: None | str | Unset
        if isinstance(self.last_heartbeat_at, Unset):
            last_heartbeat_at = UNSET
        elif isinstance(self.last_heartbeat_at, datetime.datetime):
            last_heartbeat_at = self.last_heartbeat_at.isoformat()
        else:
            last_heartbeat_at = self.last_heartbeat_at

        lease_expires_at: None | str | Unset
        if isinstance(self.lease_expires_at, Unset):
            lease_expires_at = UNSET
        elif isinstance(self.lease_expires_at, datetime.datetime):
            lease_expires_at = self.lease_expires_at.isoformat()
        else:
            lease_expires_at = self.lease_expires_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "reason": reason,
                "detail": detail,
            }
        )
        if until is not UNSET:
            field_dict["until"] = until
        if running is not UNSET:
            field_dict["running"] = running
        if cap is not UNSET:
            field_dict["cap"] = cap
        if pollers is not UNSET:
            field_dict["pollers"] = pollers
        if worker_id is not UNSET:
            field_dict["worker_id"] = worker_id
        if last_heartbeat_at is not UNSET:
            field_dict["last_heartbeat_at"] = last_heartbeat_at
        if lease_expires_at is not UNSET:
            field_dict["lease_expires_at"] = lease_expires_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        reason = d.pop("reason")

        detail = d.pop("detail")

        def _parse_until(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                until_type_0 = isoparse(data)

                return until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        until = _parse_until(d.pop("until", UNSET))

        def _parse_running(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        running = _parse_running(d.pop("running", UNSET))

        def _parse_cap(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        cap = _parse_cap(d.pop("cap", UNSET))

        def _parse_pollers(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pollers = _parse_pollers(d.pop("pollers", UNSET))

        def _parse_worker_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        worker_id = _parse_worker_id(d.pop("worker_id", UNSET))

        def _parse_last_heartbeat_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_heartbeat_at_type_0 = isoparse(data)

                return last_heartbeat_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        last_heartbeat_at = _parse_last_heartbeat_at(d.pop("last_heartbeat_at", UNSET))

        def _parse_lease_expires_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                lease_expires_at_type_0 = isoparse(data)

                return lease_expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        lease_expires_at = _parse_lease_expires_at(d.pop("lease_expires_at", UNSET))

        task_waiting = cls(
            reason=reason,
            detail=detail,
            until=until,
            running=running,
            cap=cap,
            pollers=pollers,
            worker_id=worker_id,
            last_heartbeat_at=last_heartbeat_at,
            lease_expires_at=lease_expires_at,
        )

        task_waiting.additional_properties = d
        return task_waiting

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
