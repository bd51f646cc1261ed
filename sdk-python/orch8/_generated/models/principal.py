from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.role import Role, check_role

T = TypeVar("T", bound="Principal")


@_attrs_define
class Principal:
    """The caller as the server sees it (P-AUTH-5).

    Attributes:
        auth_required (bool): Whether the server requires API keys at all.
        key_id (None | str): The key's id from the keys file (`env` for a key from `ORCH8_API_KEYS`); null without keys.
            Never the key itself.
        role (Role): A key's role (P-AUTH-2); the operations each may call are in `x-orch8-roles`.
        tenant (str): A tenant (P-TEN-1); `default` when no key or header names one. Example: team-a.
        tenants (list[str] | None): Tenants `X-Tenant-Id` may select besides `tenant`; null means any (admin, or a
            server without keys).
        queues (list[str] | None): For a worker key limited to named queues, those queues; null means any.
        handlers (list[str] | None): For a worker key limited to named handlers, those handlers; null means any.
    """

    auth_required: bool
    key_id: None | str
    role: Role
    tenant: str
    tenants: list[str] | None
    queues: list[str] | None
    handlers: list[str] | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        auth_required = self.auth_required

        key_id: None | str
        key_id = self.key_id

        role: str = self.role

        tenant = self.tenant

        tenants: list[str] | None
        if isinstance(self.tenants, list):
            tenants = self.tenants

        else:
            tenants = self.tenants

        queues: list[str] | None
        if isinstance(self.queues, list):
            queues = self.queues

        else:
            queues = self.queues

        handlers: list[str] | None
        if isinstance(self.handlers, list):
            handlers = self.handlers

        else:
            handlers = self.handlers

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "auth_required": auth_required,
                "key_id": key_id,
                "role": role,
                "tenant": tenant,
                "tenants": tenants,
                "queues": queues,
                "handlers": handlers,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        auth_required = d.pop("auth_required")

        def _parse_key_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        key_id = _parse_key_id(d.pop("key_id", None))

        role = check_role(d.pop("role"))

        tenant = d.pop("tenant")

        def _parse_tenants(data: object) -> list[str] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                tenants_type_0 = cast(list[str], data)

                return tenants_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None, data)

        tenants = _parse_tenants(d.pop("tenants", None))

        def _parse_queues(data: object) -> list[str] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                queues_type_0 = cast(list[str], data)

                return queues_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None, data)

        queues = _parse_queues(d.pop("queues", None))

        def _parse_handlers(data: object) -> list[str] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                handlers_type_0 = cast(list[str], data)

                return handlers_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None, data)

        handlers = _parse_handlers(d.pop("handlers", None))

        principal = cls(
            auth_required=auth_required,
            key_id=key_id,
            role=role,
            tenant=tenant,
            tenants=tenants,
            queues=queues,
            handlers=handlers,
        )

        principal.additional_properties = d
        return principal

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
