from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

from ..models.task_status import TaskStatus, check_task_status

T = TypeVar("T", bound="TaskOutcome")


@_attrs_define
class TaskOutcome:
    """
    Attributes:
        task_id (str): Server-assigned id, `task_` + a time-ordered ULID. Example: task_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        status (TaskStatus): See the state machine in docs/protocol.md.
        attempt (int):
        attempts_left (int):
        next_attempt_at (datetime.datetime | None):
        error_code (None | str):
    """

    task_id: str
    status: TaskStatus
    attempt: int
    attempts_left: int
    next_attempt_at: datetime.datetime | None
    error_code: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        task_id = self.task_id

        status: str = self.status

        attempt = self.attempt

        attempts_left = self.attempts_left

        next_attempt_at: None | str
        if isinstance(self.next_attempt_at, datetime.datetime):
            next_attempt_at = self.next_attempt_at.isoformat()
        else:
            next_attempt_at = self.next_attempt_at

        error_code: None | str
        error_code = self.error_code

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "task_id": task_id,
                "status": status,
                "attempt": attempt,
                "attempts_left": attempts_left,
                "next_attempt_at": next_attempt_at,
                "error_code": error_code,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        task_id = d.pop("task_id")

        status = check_task_status(d.pop("status"))

        attempt = d.pop("attempt")

        attempts_left = d.pop("attempts_left")

        def _parse_next_attempt_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_attempt_at_type_0 = isoparse(data)

                return next_attempt_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at", None))

        def _parse_error_code(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error_code = _parse_error_code(d.pop("error_code", None))

        task_outcome = cls(
            task_id=task_id,
            status=status,
            attempt=attempt,
            attempts_left=attempts_left,
            next_attempt_at=next_attempt_at,
            error_code=error_code,
        )

        task_outcome.additional_properties = d
        return task_outcome

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
