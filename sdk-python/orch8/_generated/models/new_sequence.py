from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.step import Step
    from ..models.step_action import StepAction


T = TypeVar("T", bound="NewSequence")


@_attrs_define
class NewSequence:
    """
    Attributes:
        name (str): Name of a sequence (the pattern of QueueName). Example: thumbnail.
        steps (list[Step]):
        on_error (StepAction | Unset): What a fallback or `on_error` runs (a step without id).
    """

    name: str
    steps: list[Step]
    on_error: StepAction | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        on_error: dict[str, Any] | Unset = UNSET
        if not isinstance(self.on_error, Unset):
            on_error = self.on_error.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "steps": steps,
            }
        )
        if on_error is not UNSET:
            field_dict["on_error"] = on_error

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.step import Step
        from ..models.step_action import StepAction

        d = dict(src_dict)
        name = d.pop("name")

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = Step.from_dict(steps_item_data)

            steps.append(steps_item)

        _on_error = d.pop("on_error", UNSET)
        on_error: StepAction | Unset
        if isinstance(_on_error, Unset):
            on_error = UNSET
        else:
            on_error = StepAction.from_dict(_on_error)

        new_sequence = cls(
            name=name,
            steps=steps,
            on_error=on_error,
        )

        return new_sequence
