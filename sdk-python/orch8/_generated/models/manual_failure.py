from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.json_object import JsonObject


T = TypeVar("T", bound="ManualFailure")


@_attrs_define
class ManualFailure:
    """
    Attributes:
        error (str):
        code (str | Unset): Defaults to `manual`.
        details (JsonObject | Unset): Any JSON object.
    """

    error: str
    code: str | Unset = UNSET
    details: JsonObject | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        error = self.error

        code = self.code

        details: dict[str, Any] | Unset = UNSET
        if not isinstance(self.details, Unset):
            details = self.details.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "error": error,
            }
        )
        if code is not UNSET:
            field_dict["code"] = code
        if details is not UNSET:
            field_dict["details"] = details

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.json_object import JsonObject

        d = dict(src_dict)
        error = d.pop("error")

        code = d.pop("code", UNSET)

        _details = d.pop("details", UNSET)
        details: JsonObject | Unset
        if isinstance(_details, Unset):
            details = UNSET
        else:
            details = JsonObject.from_dict(_details)

        manual_failure = cls(
            error=error,
            code=code,
            details=details,
        )

        return manual_failure
