from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="RetryPolicy")


@_attrs_define
class RetryPolicy:
    """Server-computed exponential backoff with jitter and cap (P-RETRY-2).

    Attributes:
        max_attempts (int | Unset): Attempts in all, the first included. Default: 3.
        initial_backoff_ms (int | Unset):  Default: 1000.
        backoff_multiplier (float | Unset):  Default: 2.0.
        max_backoff_ms (int | Unset):  Default: 300000.
        jitter (float | Unset): Fraction of the delay randomised away (0 = exact delays). Default: 0.2.
    """

    max_attempts: int | Unset = 3
    initial_backoff_ms: int | Unset = 1000
    backoff_multiplier: float | Unset = 2.0
    max_backoff_ms: int | Unset = 300000
    jitter: float | Unset = 0.2

    def to_dict(self) -> dict[str, Any]:
        max_attempts = self.max_attempts

        initial_backoff_ms = self.initial_backoff_ms

        backoff_multiplier = self.backoff_multiplier

        max_backoff_ms = self.max_backoff_ms

        jitter = self.jitter

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if max_attempts is not UNSET:
            field_dict["max_attempts"] = max_attempts
        if initial_backoff_ms is not UNSET:
            field_dict["initial_backoff_ms"] = initial_backoff_ms
        if backoff_multiplier is not UNSET:
            field_dict["backoff_multiplier"] = backoff_multiplier
        if max_backoff_ms is not UNSET:
            field_dict["max_backoff_ms"] = max_backoff_ms
        if jitter is not UNSET:
            field_dict["jitter"] = jitter

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        max_attempts = d.pop("max_attempts", UNSET)

        initial_backoff_ms = d.pop("initial_backoff_ms", UNSET)

        backoff_multiplier = d.pop("backoff_multiplier", UNSET)

        max_backoff_ms = d.pop("max_backoff_ms", UNSET)

        jitter = d.pop("jitter", UNSET)

        retry_policy = cls(
            max_attempts=max_attempts,
            initial_backoff_ms=initial_backoff_ms,
            backoff_multiplier=backoff_multiplier,
            max_backoff_ms=max_backoff_ms,
            jitter=jitter,
        )

        return retry_policy
