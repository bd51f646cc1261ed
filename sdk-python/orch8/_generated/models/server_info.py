from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.server_info_storage import ServerInfoStorage, check_server_info_storage

if TYPE_CHECKING:
    from ..models.server_defaults import ServerDefaults


T = TypeVar("T", bound="ServerInfo")


@_attrs_define
class ServerInfo:
    """
    Attributes:
        name (str):
        version (str):
        spec_version (str):
        spec_sha256 (str): SHA-256 of the openapi.yaml the server was built from.
        storage (ServerInfoStorage):
        defaults (ServerDefaults):
    """

    name: str
    version: str
    spec_version: str
    spec_sha256: str
    storage: ServerInfoStorage
    defaults: ServerDefaults
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        version = self.version

        spec_version = self.spec_version

        spec_sha256 = self.spec_sha256

        storage: str = self.storage

        defaults = self.defaults.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "version": version,
                "spec_version": spec_version,
                "spec_sha256": spec_sha256,
                "storage": storage,
                "defaults": defaults,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.server_defaults import ServerDefaults

        d = dict(src_dict)
        name = d.pop("name")

        version = d.pop("version")

        spec_version = d.pop("spec_version")

        spec_sha256 = d.pop("spec_sha256")

        storage = check_server_info_storage(d.pop("storage"))

        defaults = ServerDefaults.from_dict(d.pop("defaults"))

        server_info = cls(
            name=name,
            version=version,
            spec_version=spec_version,
            spec_sha256=spec_sha256,
            storage=storage,
            defaults=defaults,
        )

        server_info.additional_properties = d
        return server_info

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
