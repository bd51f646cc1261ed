from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..models.worker_heartbeat_state import (
    WorkerHeartbeatState,
    check_worker_heartbeat_state,
)
from ..types import UNSET, Unset

T = TypeVar("T", bound="WorkerHeartbeat")


@_attrs_define
class WorkerHeartbeat:
    """
    Attributes:
        state (WorkerHeartbeatState | Unset):  Default: 'running'.
        active_task_ids (list[str] | Unset): Every task the worker holds, running or waiting for a slot.
        lease_ms (int | Unset): New lease length for each listed task; each lease's own length when omitted.
    """

    state: WorkerHeartbeatState | Unset = "running"
    active_task_ids: list[str] | Unset = UNSET
    lease_ms: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        state: str | Unset = UNSET
        if not isinstance(self.state, Unset):
            state = self.state

        active_task_ids: list[str] | Unset = UNSET
        if not isinstance(self.active_task_ids, Unset):
            active_task_ids = self.active_task_ids

        lease_ms = self.lease_ms

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if state is not UNSET:
            field_dict["state"] = state
        if active_task_ids is not UNSET:
            field_dict["active_task_ids"] = active_task_ids
        if lease_ms is not UNSET:
            field_dict["lease_ms"] = lease_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        _state = d.pop("state", UNSET)
        state: WorkerHeartbeatState | Unset
        if isinstance(_state, Unset):
            state = UNSET
        else:
            state = check_worker_heartbeat_state(_state)

        active_task_ids = cast(list[str], d.pop("active_task_ids", UNSET))

        lease_ms = d.pop("lease_ms", UNSET)

        worker_heartbeat = cls(
            state=state,
            active_task_ids=active_task_ids,
            lease_ms=lease_ms,
        )

        return worker_heartbeat
