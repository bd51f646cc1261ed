from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.step import Step
    from ..models.step_action import StepAction


T = TypeVar("T", bound="Sequence")


@_attrs_define
class Sequence:
    """
    Attributes:
        name (str):
        version (int):
        steps (list[Step]):
        blocks (list[Step]): The same list as `steps` (P-WF-1).
        on_error (None | StepAction):
        created_at (datetime.datetime):
        tenant (str | Unset): A tenant (P-TEN-1); `default` when no key or header names one. Example: team-a.
    """

    name: str
    version: int
    steps: list[Step]
    blocks: list[Step]
    on_error: None | StepAction
    created_at: datetime.datetime
    tenant: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.step_action import StepAction

        name = self.name

        version = self.version

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        blocks = []
        for blocks_item_data in self.blocks:
            blocks_item = blocks_item_data.to_dict()
            blocks.append(blocks_item)

        on_error: dict[str, Any] | None
        if isinstance(self.on_error, StepAction):
            on_error = self.on_error.to_dict()
        else:
            on_error = self.on_error

        created_at = self.created_at.isoformat()

        tenant = self.tenant

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "version": version,
                "steps": steps,
                "blocks": blocks,
                "on_error": on_error,
                "created_at": created_at,
            }
        )
        if tenant is not UNSET:
            field_dict["tenant"] = tenant

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.step import Step
        from ..models.step_action import StepAction

        d = dict(src_dict)
        name = d.pop("name")

        version = d.pop("version")

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = Step.from_dict(steps_item_data)

            steps.append(steps_item)

        blocks = []
        _blocks = d.pop("blocks")
        for blocks_item_data in _blocks:
            blocks_item = Step.from_dict(blocks_item_data)

            blocks.append(blocks_item)

        def _parse_on_error(data: object) -> None | StepAction:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                on_error_type_0 = StepAction.from_dict(data)

                return on_error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StepAction, data)

        on_error = _parse_on_error(d.pop("on_error", None))

        created_at = isoparse(d.pop("created_at"))

        tenant = d.pop("tenant", UNSET)

        sequence = cls(
            name=name,
            version=version,
            steps=steps,
            blocks=blocks,
            on_error=on_error,
            created_at=created_at,
            tenant=tenant,
        )

        sequence.additional_properties = d
        return sequence

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
