from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="ServerDefaults")


@_attrs_define
class ServerDefaults:
    """
    Attributes:
        lease_ms (int):
        wait_ms (int):
        max_wait_ms (int):
        reaper_interval_ms (int):
        heartbeat_interval_ms (int): Worker heartbeat cadence the server asks for (P-WORKER-1).
        dead_after_ms (int): Silence after which a registered worker is declared dead (P-WORKER-5).
        worker_heartbeat_interval_ms (int): Deprecated alias of `heartbeat_interval_ms`.
        worker_dead_after_ms (int): Deprecated alias of `dead_after_ms`.
        max_attempts (int):
        max_batch_size (int):
    """

    lease_ms: int
    wait_ms: int
    max_wait_ms: int
    reaper_interval_ms: int
    heartbeat_interval_ms: int
    dead_after_ms: int
    worker_heartbeat_interval_ms: int
    worker_dead_after_ms: int
    max_attempts: int
    max_batch_size: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        lease_ms = self.lease_ms

        wait_ms = self.wait_ms

        max_wait_ms = self.max_wait_ms

        reaper_interval_ms = self.reaper_interval_ms

        heartbeat_interval_ms = self.heartbeat_interval_ms

        dead_after_ms = self.dead_after_ms

        worker_heartbeat_interval_ms = self.worker_heartbeat_interval_ms

        worker_dead_after_ms = self.worker_dead_after_ms

        max_attempts = self.max_attempts

        max_batch_size = self.max_batch_size

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "lease_ms": lease_ms,
                "wait_ms": wait_ms,
                "max_wait_ms": max_wait_ms,
                "reaper_interval_ms": reaper_interval_ms,
                "heartbeat_interval_ms": heartbeat_interval_ms,
                "dead_after_ms": dead_after_ms,
                "worker_heartbeat_interval_ms": worker_heartbeat_interval_ms,
                "worker_dead_after_ms": worker_dead_after_ms,
                "max_attempts": max_attempts,
                "max_batch_size": max_batch_size,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        lease_ms = d.pop("lease_ms")

        wait_ms = d.pop("wait_ms")

        max_wait_ms = d.pop("max_wait_ms")

        reaper_interval_ms = d.pop("reaper_interval_ms")

        heartbeat_interval_ms = d.pop("heartbeat_interval_ms")

        dead_after_ms = d.pop("dead_after_ms")

        worker_heartbeat_interval_ms = d.pop("worker_heartbeat_interval_ms")

        worker_dead_after_ms = d.pop("worker_dead_after_ms")

        max_attempts = d.pop("max_attempts")

        max_batch_size = d.pop("max_batch_size")

        server_defaults = cls(
            lease_ms=lease_ms,
            wait_ms=wait_ms,
            max_wait_ms=max_wait_ms,
            reaper_interval_ms=reaper_interval_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            dead_after_ms=dead_after_ms,
            worker_heartbeat_interval_ms=worker_heartbeat_interval_ms,
            worker_dead_after_ms=worker_dead_after_ms,
            max_attempts=max_attempts,
            max_batch_size=max_batch_size,
        )

        server_defaults.additional_properties = d
        return server_defaults

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
