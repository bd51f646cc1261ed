from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from dateutil.parser import isoparse
from typing_extensions import Self

T = TypeVar("T", bound="RateLimit")


@_attrs_define
class RateLimit:
    """
    Attributes:
        key (str): Names a rate limit (P-RATE-1), per tenant; an operator defines its pace with `PUT /rate-
            limits/{key}`. Example: crm-api.
        limit (int):
        period_ms (int):
        burst (int):
        tokens (float): Tokens in the bucket now.
        next_token_at (datetime.datetime | None): When the next token comes while tasks wait for one; null when none
            waits, or when the admitted ones wait for a worker (P-RATE-2).
        held (int): Tasks waiting for a token.
        updated_at (datetime.datetime):
    """

    key: str
    limit: int
    period_ms: int
    burst: int
    tokens: float
    next_token_at: datetime.datetime | None
    held: int
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        key = self.key

        limit = self.limit

        period_ms = self.period_ms

        burst = self.burst

        tokens = self.tokens

        next_token_at: None | str
        if isinstance(self.next_token_at, datetime.datetime):
            next_token_at = self.next_token_at.isoformat()
        else:
            next_token_at = self.next_token_at

        held = self.held

        updated_at = self.updated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "key": key,
                "limit": limit,
                "period_ms": period_ms,
                "burst": burst,
                "tokens": tokens,
                "next_token_at": next_token_at,
                "held": held,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        key = d.pop("key")

        limit = d.pop("limit")

        period_ms = d.pop("period_ms")

        burst = d.pop("burst")

        tokens = d.pop("tokens")

        def _parse_next_token_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_token_at_type_0 = isoparse(data)

                return next_token_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        next_token_at = _parse_next_token_at(d.pop("next_token_at", None))

        held = d.pop("held")

        updated_at = isoparse(d.pop("updated_at"))

        rate_limit = cls(
            key=key,
            limit=limit,
            period_ms=period_ms,
            burst=burst,
            tokens=tokens,
            next_token_at=next_token_at,
            held=held,
            updated_at=updated_at,
        )

        rate_limit.additional_properties = d
        return rate_limit

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
