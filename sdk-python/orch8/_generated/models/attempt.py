from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

from ..models.attempt_outcome import AttemptOutcome, check_attempt_outcome

if TYPE_CHECKING:
    from ..models.task_failure import TaskFailure


T = TypeVar("T", bound="Attempt")


@_attrs_define
class Attempt:
    """
    Attributes:
        attempt (int):
        lease_id (str):  Example: lease_01JDZ8Y7A1B2C3D4E5F6G7H8J9.
        worker_id (None | str):
        started_at (datetime.datetime):
        ended_at (datetime.datetime | None):
        outcome (AttemptOutcome):
        error (None | TaskFailure):
    """

    attempt: int
    lease_id: str
    worker_id: None | str
    started_at: datetime.datetime
    ended_at: datetime.datetime | None
    outcome: AttemptOutcome
    error: None | TaskFailure
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.task_failure import TaskFailure

        attempt = self.attempt

        lease_id = self.lease_id

        worker_id: None | str
        worker_id = self.worker_id

        started_at = self.started_at.isoformat()

        ended_at: None | str
        if isinstance(self.ended_at, datetime.datetime):
            ended_at = self.ended_at.isoformat()
        else:
            ended_at = self.ended_at

        outcome: str = self.outcome

        error: dict[str, Any] | None
        if isinstance(self.error, TaskFailure):
            error = self.error.to_dict()
        else:
            error = self.error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "lease_id": lease_id,
                "worker_id": worker_id,
                "started_at": started_at,
                "ended_at": ended_at,
                "outcome": outcome,
                "error": error,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.task_failure import TaskFailure

        d = dict(src_dict)
        attempt = d.pop("attempt")

        lease_id = d.pop("lease_id")

        def _parse_worker_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        worker_id = _parse_worker_id(d.pop("worker_id", None))

        started_at = isoparse(d.pop("started_at"))

        def _parse_ended_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ended_at_type_0 = isoparse(data)

                return ended_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        ended_at = _parse_ended_at(d.pop("ended_at", None))

        outcome = check_attempt_outcome(d.pop("outcome"))

        def _parse_error(data: object) -> None | TaskFailure:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = TaskFailure.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskFailure, data)

        error = _parse_error(d.pop("error", None))

        attempt = cls(
            attempt=attempt,
            lease_id=lease_id,
            worker_id=worker_id,
            started_at=started_at,
            ended_at=ended_at,
            outcome=outcome,
            error=error,
        )

        attempt.additional_properties = d
        return attempt

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
