from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

from ..models.batch_item_status import BatchItemStatus, check_batch_item_status

if TYPE_CHECKING:
    from ..models.item_problem import ItemProblem


T = TypeVar("T", bound="BatchItemOutcome")


@_attrs_define
class BatchItemOutcome:
    """
    Attributes:
        task_id (str):
        status (BatchItemStatus): `error` means this item was not applied; the task is unchanged.
        attempt (int | None):
        attempts_left (int | None):
        next_attempt_at (datetime.datetime | None):
        problem (ItemProblem | None):
    """

    task_id: str
    status: BatchItemStatus
    attempt: int | None
    attempts_left: int | None
    next_attempt_at: datetime.datetime | None
    problem: ItemProblem | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.item_problem import ItemProblem

        task_id = self.task_id

        status: str = self.status

        attempt: int | None
        attempt = self.attempt

        attempts_left: int | None
        attempts_left = self.attempts_left

        next_attempt_at: None | str
        if isinstance(self.next_attempt_at, datetime.datetime):
            next_attempt_at = self.next_attempt_at.isoformat()
        else:
            next_attempt_at = self.next_attempt_at

        problem: dict[str, Any] | None
        if isinstance(self.problem, ItemProblem):
            problem = self.problem.to_dict()
        else:
            problem = self.problem

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "task_id": task_id,
                "status": status,
                "attempt": attempt,
                "attempts_left": attempts_left,
                "next_attempt_at": next_attempt_at,
                "problem": problem,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.item_problem import ItemProblem

        d = dict(src_dict)
        task_id = d.pop("task_id")

        status = check_batch_item_status(d.pop("status"))

        def _parse_attempt(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        attempt = _parse_attempt(d.pop("attempt", None))

        def _parse_attempts_left(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        attempts_left = _parse_attempts_left(d.pop("attempts_left", None))

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

        def _parse_problem(data: object) -> ItemProblem | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                problem_type_0 = ItemProblem.from_dict(data)

                return problem_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ItemProblem | None, data)

        problem = _parse_problem(d.pop("problem", None))

        batch_item_outcome = cls(
            task_id=task_id,
            status=status,
            attempt=attempt,
            attempts_left=attempts_left,
            next_attempt_at=next_attempt_at,
            problem=problem,
        )

        batch_item_outcome.additional_properties = d
        return batch_item_outcome

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
