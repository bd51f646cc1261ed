from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.step import Step
    from ..models.step_action import StepAction


T = TypeVar("T", bound="NewSequence")


@_attrs_define
class NewSequence:
    """`blocks` (Orch8's name) or `steps` (the 1.x name) holds the sequence's blocks; give
    one of them, or both equal (a sequence read back has both) (P-WF-1).

        Attributes:
            name (str): Name of a sequence (the pattern of QueueName). Example: thumbnail.
            steps (list[Step] | Unset):
            blocks (list[Step] | Unset):
            on_error (None | StepAction | Unset): Runs when the instance fails (P-WF-6). `null` means none, as a sequence
                read back says, so a definition read back is accepted as written (P-WF-1).
    """

    name: str
    steps: list[Step] | Unset = UNSET
    blocks: list[Step] | Unset = UNSET
    on_error: None | StepAction | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.step_action import StepAction

        name = self.name

        steps: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.steps, Unset):
            steps = []
            for steps_item_data in self.steps:
                steps_item = steps_item_data.to_dict()
                steps.append(steps_item)

        blocks: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.blocks, Unset):
            blocks = []
            for blocks_item_data in self.blocks:
                blocks_item = blocks_item_data.to_dict()
                blocks.append(blocks_item)

        on_error: dict[str, Any] | None | Unset
        if isinstance(self.on_error, Unset):
            on_error = UNSET
        elif isinstance(self.on_error, StepAction):
            on_error = self.on_error.to_dict()
        else:
            on_error = self.on_error

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if steps is not UNSET:
            field_dict["steps"] = steps
        if blocks is not UNSET:
            field_dict["blocks"] = blocks
        if on_error is not UNSET:
            field_dict["on_error"] = on_error

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.step import Step
        from ..models.step_action import StepAction

        d = dict(src_dict)
        name = d.pop("name")

        _steps = d.pop("steps", UNSET)
        steps: list[Step] | Unset = UNSET
        if _steps is not UNSET:
            steps = []
            for steps_item_data in _steps:
                steps_item = Step.from_dict(steps_item_data)

                steps.append(steps_item)

        _blocks = d.pop("blocks", UNSET)
        blocks: list[Step] | Unset = UNSET
        if _blocks is not UNSET:
            blocks = []
            for blocks_item_data in _blocks:
                blocks_item = Step.from_dict(blocks_item_data)

                blocks.append(blocks_item)

        def _parse_on_error(data: object) -> None | StepAction | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                on_error_type_0 = StepAction.from_dict(data)

                return on_error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StepAction | Unset, data)

        on_error = _parse_on_error(d.pop("on_error", UNSET))

        new_sequence = cls(
            name=name,
            steps=steps,
            blocks=blocks,
            on_error=on_error,
        )

        return new_sequence
