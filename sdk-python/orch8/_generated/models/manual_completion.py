from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="ManualCompletion")


@_attrs_define
class ManualCompletion:
    """
    Attributes:
        output (Any | Unset): The result, any JSON value.
        reason (str | Unset): Why an operator resolved it by hand.
    """

    output: Any | Unset = UNSET
    reason: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        output = self.output

        reason = self.reason

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if output is not UNSET:
            field_dict["output"] = output
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        output = d.pop("output", UNSET)

        reason = d.pop("reason", UNSET)

        manual_completion = cls(
            output=output,
            reason=reason,
        )

        return manual_completion
