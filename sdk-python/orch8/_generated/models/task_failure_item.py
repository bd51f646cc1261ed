from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_object import JsonObject


T = TypeVar("T", bound="TaskFailureItem")


@_attrs_define
class TaskFailureItem:
    """
    Attributes:
        task_id (str): Server-assigned id, `task_` + a time-ordered ULID. Example: task_01JDZ8Y6M3X9K2Q4R5S6T7V8W9.
        error (str):
        lease_id (str | Unset):  Example: lease_01JDZ8Y7A1B2C3D4E5F6G7H8J9.
        retryable (bool | Unset):  Default: False.
        code (str | Unset): Stored as `worker_error` when omitted (P-RETRY-7).
        retry_after_ms (int | Unset):
        details (JsonObject | Unset): Any JSON object.
        checkpoint (JsonObject | Unset): Any JSON object.
    """

    task_id: str
    error: str
    lease_id: str | Unset = UNSET
    retryable: bool | Unset = False
    code: str | Unset = UNSET
    retry_after_ms: int | Unset = UNSET
    details: JsonObject | Unset = UNSET
    checkpoint: JsonObject | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        task_id = self.task_id

        error = self.error

        lease_id = self.lease_id

        retryable = self.retryable

        code = self.code

        retry_after_ms = self.retry_after_ms

        details: dict[str, Any] | Unset = UNSET
        if not isinstance(self.details, Unset):
            details = self.details.to_dict()

        checkpoint: dict[str, Any] | Unset = UNSET
        if not isinstance(self.checkpoint, Unset):
            checkpoint = self.checkpoint.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "task_id": task_id,
                "error": error,
            }
        )
        if lease_id is not UNSET:
            field_dict["lease_id"] = lease_id
        if retryable is not UNSET:
            field_dict["retryable"] = retryable
        if code is not UNSET:
            field_dict["code"] = code
        if retry_after_ms is not UNSET:
            field_dict["retry_after_ms"] = retry_after_ms
        if details is not UNSET:
            field_dict["details"] = details
        if checkpoint is not UNSET:
            field_dict["checkpoint"] = checkpoint

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.json_object import JsonObject

        d = dict(src_dict)
        task_id = d.pop("task_id")

        error = d.pop("error")

        lease_id = d.pop("lease_id", UNSET)

        retryable = d.pop("retryable", UNSET)

        code = d.pop("code", UNSET)

        retry_after_ms = d.pop("retry_after_ms", UNSET)

        _details = d.pop("details", UNSET)
        details: JsonObject | Unset
        if isinstance(_details, Unset):
            details = UNSET
        else:
            details = JsonObject.from_dict(_details)

        _checkpoint = d.pop("checkpoint", UNSET)
        checkpoint: JsonObject | Unset
        if isinstance(_checkpoint, Unset):
            checkpoint = UNSET
        else:
            checkpoint = JsonObject.from_dict(_checkpoint)

        task_failure_item = cls(
            task_id=task_id,
            error=error,
            lease_id=lease_id,
            retryable=retryable,
            code=code,
            retry_after_ms=retry_after_ms,
            details=details,
            checkpoint=checkpoint,
        )

        return task_failure_item
