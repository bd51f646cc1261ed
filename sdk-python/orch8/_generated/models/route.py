from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.step import Step


T = TypeVar("T", bound="Route")


@_attrs_define
class Route:
    """
    Attributes:
        condition (str): A condition or value (P-WF-12): JSON literals, paths (`context.data.plan`,
            `steps.<id>.output.items[0]`), `!`, `+ - * / %`, `== != < <= > >=`, `in`, `&&`,
            `||`, `c ? a : b`, `len(x)`, `abs(x)`, `json(x)`. Malformed is 422 at definition.
             Example: context.data.plan == "enterprise".
        blocks (list[Step]):
    """

    condition: str
    blocks: list[Step]

    def to_dict(self) -> dict[str, Any]:
        condition = self.condition

        blocks = []
        for componentsschemas_block_list_item_data in self.blocks:
            componentsschemas_block_list_item = (
                componentsschemas_block_list_item_data.to_dict()
            )
            blocks.append(componentsschemas_block_list_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "condition": condition,
                "blocks": blocks,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.step import Step

        d = dict(src_dict)
        condition = d.pop("condition")

        blocks = []
        _blocks = d.pop("blocks")
        for componentsschemas_block_list_item_data in _blocks:
            componentsschemas_block_list_item = Step.from_dict(
                componentsschemas_block_list_item_data
            )

            blocks.append(componentsschemas_block_list_item)

        route = cls(
            condition=condition,
            blocks=blocks,
        )

        return route
