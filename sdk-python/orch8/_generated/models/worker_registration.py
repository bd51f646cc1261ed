from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.worker_registration_labels import WorkerRegistrationLabels


T = TypeVar("T", bound="WorkerRegistration")


@_attrs_define
class WorkerRegistration:
    """
    Attributes:
        worker_id (str): Stable identifier of one worker process. Example: img-worker-1.
        hostname (str | Unset):
        pid (int | Unset):
        handlers (list[str] | Unset):
        queues (list[str] | Unset):
        concurrency (int | Unset):
        labels (WorkerRegistrationLabels | Unset):
        sdk (str | Unset): SDK name and version, e.g. `orch8-go/0.1.0`.
    """

    worker_id: str
    hostname: str | Unset = UNSET
    pid: int | Unset = UNSET
    handlers: list[str] | Unset = UNSET
    queues: list[str] | Unset = UNSET
    concurrency: int | Unset = UNSET
    labels: WorkerRegistrationLabels | Unset = UNSET
    sdk: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        worker_id = self.worker_id

        hostname = self.hostname

        pid = self.pid

        handlers: list[str] | Unset = UNSET
        if not isinstance(self.handlers, Unset):
            handlers = self.handlers

        queues: list[str] | Unset = UNSET
        if not isinstance(self.queues, Unset):
            queues = self.queues

        concurrency = self.concurrency

        labels: dict[str, Any] | Unset = UNSET
        if not isinstance(self.labels, Unset):
            labels = self.labels.to_dict()

        sdk = self.sdk

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "worker_id": worker_id,
            }
        )
        if hostname is not UNSET:
            field_dict["hostname"] = hostname
        if pid is not UNSET:
            field_dict["pid"] = pid
        if handlers is not UNSET:
            field_dict["handlers"] = handlers
        if queues is not UNSET:
            field_dict["queues"] = queues
        if concurrency is not UNSET:
            field_dict["concurrency"] = concurrency
        if labels is not UNSET:
            field_dict["labels"] = labels
        if sdk is not UNSET:
            field_dict["sdk"] = sdk

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.worker_registration_labels import WorkerRegistrationLabels

        d = dict(src_dict)
        worker_id = d.pop("worker_id")

        hostname = d.pop("hostname", UNSET)

        pid = d.pop("pid", UNSET)

        handlers = cast(list[str], d.pop("handlers", UNSET))

        queues = cast(list[str], d.pop("queues", UNSET))

        concurrency = d.pop("concurrency", UNSET)

        _labels = d.pop("labels", UNSET)
        labels: WorkerRegistrationLabels | Unset
        if isinstance(_labels, Unset):
            labels = UNSET
        else:
            labels = WorkerRegistrationLabels.from_dict(_labels)

        sdk = d.pop("sdk", UNSET)

        worker_registration = cls(
            worker_id=worker_id,
            hostname=hostname,
            pid=pid,
            handlers=handlers,
            queues=queues,
            concurrency=concurrency,
            labels=labels,
            sdk=sdk,
        )

        return worker_registration
