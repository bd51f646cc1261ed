from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.task_failure_details_type_0 import TaskFailureDetailsType0


T = TypeVar("T", bound="TaskFailure")


@_attrs_define
class TaskFailure:
    """Why an attempt (or the task) failed.

    Attributes:
        message (str):
        code (str): Machine code of the failure: one the server sets, one an SDK sends, or the
            worker's own. A fail reported without `code` is stored as `worker_error`.
            Known codes are listed in `x-orch8-failure-codes`; the list is open.
        retryable (bool):
        details (None | TaskFailureDetailsType0):
    """

    message: str
    code: str
    retryable: bool
    details: None | TaskFailureDetailsType0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.task_failure_details_type_0 import TaskFailureDetailsType0

        message = self.message

        code = self.code

        retryable = self.retryable

        details: dict[str, Any] | None
        if isinstance(self.details, TaskFailureDetailsType0):
            details = self.details.to_dict()
        else:
            details = self.details

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "message": message,
                "code": code,
                "retryable": retryable,
                "details": details,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.task_failure_details_type_0 import TaskFailureDetailsType0

        d = dict(src_dict)
        message = d.pop("message")

        code = d.pop("code")

        retryable = d.pop("retryable")

        def _parse_details(data: object) -> None | TaskFailureDetailsType0:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                details_type_0 = TaskFailureDetailsType0.from_dict(data)

                return details_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskFailureDetailsType0, data)

        details = _parse_details(d.pop("details", None))

        task_failure = cls(
            message=message,
            code=code,
            retryable=retryable,
            details=details,
        )

        task_failure.additional_properties = d
        return task_failure

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
