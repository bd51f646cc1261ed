from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

T = TypeVar("T", bound="Lease")


@_attrs_define
class Lease:
    """Exclusive right of one worker to finish one attempt of a task (P-LEASE-1).

    Attributes:
        id (str):  Example: lease_01JDZ8Y7A1B2C3D4E5F6G7H8J9.
        worker_id (None | str): The claiming worker; null when the poll named none.
        attempt (int):
        expires_at (datetime.datetime):
    """

    id: str
    worker_id: None | str
    attempt: int
    expires_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        worker_id: None | str
        worker_id = self.worker_id

        attempt = self.attempt

        expires_at = self.expires_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "worker_id": worker_id,
                "attempt": attempt,
                "expires_at": expires_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        def _parse_worker_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        worker_id = _parse_worker_id(d.pop("worker_id", None))

        attempt = d.pop("attempt")

        expires_at = isoparse(d.pop("expires_at"))

        lease = cls(
            id=id,
            worker_id=worker_id,
            attempt=attempt,
            expires_at=expires_at,
        )

        lease.additional_properties = d
        return lease

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
