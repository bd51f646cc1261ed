from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="TenantListTenantsItem")


@_attrs_define
class TenantListTenantsItem:
    """
    Attributes:
        tenant (str): A tenant (P-TEN-1); `default` when no key or header names one. Example: team-a.
        tasks (int): Tasks stored for the tenant, in any state.
        workers (int): Registered workers not yet forgotten.
    """

    tenant: str
    tasks: int
    workers: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        tenant = self.tenant

        tasks = self.tasks

        workers = self.workers

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "tenant": tenant,
                "tasks": tasks,
                "workers": workers,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        tenant = d.pop("tenant")

        tasks = d.pop("tasks")

        workers = d.pop("workers")

        tenant_list_tenants_item = cls(
            tenant=tenant,
            tasks=tasks,
            workers=workers,
        )

        tenant_list_tenants_item.additional_properties = d
        return tenant_list_tenants_item

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
