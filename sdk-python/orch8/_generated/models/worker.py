from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

from ..models.worker_directive import WorkerDirective, check_worker_directive
from ..models.worker_state import WorkerState, check_worker_state
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.worker_labels import WorkerLabels


T = TypeVar("T", bound="Worker")


@_attrs_define
class Worker:
    """
    Attributes:
        worker_id (str):
        state (WorkerState):
        directive (WorkerDirective): What the server wants the worker to do (P-WORKER-3).
        hostname (None | str):
        pid (int | None):
        handlers (list[str]):
        queues (list[str]):
        concurrency (int | None):
        labels (WorkerLabels):
        sdk (None | str):
        active_tasks (int): Tasks this worker holds a lease on.
        registered_at (datetime.datetime):
        last_heartbeat_at (datetime.datetime):
        heartbeat_interval_ms (int): Cadence the server expects.
        dead_after_ms (int): Silence after which the worker is declared dead (P-WORKER-5).
        tenant (str | Unset): A tenant (P-TEN-1); `default` when no key or header names one. Example: team-a.
    """

    worker_id: str
    state: WorkerState
    directive: WorkerDirective
    hostname: None | str
    pid: int | None
    handlers: list[str]
    queues: list[str]
    concurrency: int | None
    labels: WorkerLabels
    sdk: None | str
    active_tasks: int
    registered_at: datetime.datetime
    last_heartbeat_at: datetime.datetime
    heartbeat_interval_ms: int
    dead_after_ms: int
    tenant: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        worker_id = self.worker_id

        state: str = self.state

        directive: str = self.directive

        hostname: None | str
        hostname = self.hostname

        pid: int | None
        pid = self.pid

        handlers = self.handlers

        queues = self.queues

        concurrency: int | None
        concurrency = self.concurrency

        labels = self.labels.to_dict()

        sdk: None | str
        sdk = self.sdk

        active_tasks = self.active_tasks

        registered_at = self.registered_at.isoformat()

        last_heartbeat_at = self.last_heartbeat_at.isoformat()

        heartbeat_interval_ms = self.heartbeat_interval_ms

        dead_after_ms = self.dead_after_ms

        tenant = self.tenant

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "worker_id": worker_id,
                "state": state,
                "directive": directive,
                "hostname": hostname,
                "pid": pid,
                "handlers": handlers,
                "queues": queues,
                "concurrency": concurrency,
                "labels": labels,
                "sdk": sdk,
                "active_tasks": active_tasks,
                "registered_at": registered_at,
                "last_heartbeat_at": last_heartbeat_at,
                "heartbeat_interval_ms": heartbeat_interval_ms,
                "dead_after_ms": dead_after_ms,
            }
        )
        if tenant is not UNSET:
            field_dict["tenant"] = tenant

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.worker_labels import WorkerLabels

        d = dict(src_dict)
        worker_id = d.pop("worker_id")

        state = check_worker_state(d.pop("state"))

        directive = check_worker_directive(d.pop("directive"))

        def _parse_hostname(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        hostname = _parse_hostname(d.pop("hostname", None))

        def _parse_pid(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        pid = _parse_pid(d.pop("pid", None))

        handlers = cast(list[str], d.pop("handlers"))

        queues = cast(list[str], d.pop("queues"))

        def _parse_concurrency(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        concurrency = _parse_concurrency(d.pop("concurrency", None))

        labels = WorkerLabels.from_dict(d.pop("labels"))

        def _parse_sdk(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        sdk = _parse_sdk(d.pop("sdk", None))

        active_tasks = d.pop("active_tasks")

        registered_at = isoparse(d.pop("registered_at"))

        last_heartbeat_at = isoparse(d.pop("last_heartbeat_at"))

        heartbeat_interval_ms = d.pop("heartbeat_interval_ms")

        dead_after_ms = d.pop("dead_after_ms")

        tenant = d.pop("tenant", UNSET)

        worker = cls(
            worker_id=worker_id,
            state=state,
            directive=directive,
            hostname=hostname,
            pid=pid,
            handlers=handlers,
            queues=queues,
            concurrency=concurrency,
            labels=labels,
            sdk=sdk,
            active_tasks=active_tasks,
            registered_at=registered_at,
            last_heartbeat_at=last_heartbeat_at,
            heartbeat_interval_ms=heartbeat_interval_ms,
            dead_after_ms=dead_after_ms,
            tenant=tenant,
        )

        worker.additional_properties = d
        return worker

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
