from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

T = TypeVar("T", bound="RetryPolicySettings")


@_attrs_define
class RetryPolicySettings:
    """The effective retry policy of a task.

    Attributes:
        max_attempts (int):
        initial_backoff_ms (int):
        backoff_multiplier (float):
        max_backoff_ms (int):
        jitter (float):
    """

    max_attempts: int
    initial_backoff_ms: int
    backoff_multiplier: float
    max_backoff_ms: int
    jitter: float

    def to_dict(self) -> dict[str, Any]:
        max_attempts = self.max_attempts

        initial_backoff_ms = self.initial_backoff_ms

        backoff_multiplier = self.backoff_multiplier

        max_backoff_ms = self.max_backoff_ms

        jitter = self.jitter

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "max_attempts": max_attempts,
                "initial_backoff_ms": initial_backoff_ms,
                "backoff_multiplier": backoff_multiplier,
                "max_backoff_ms": max_backoff_ms,
                "jitter": jitter,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        max_attempts = d.pop("max_attempts")

        initial_backoff_ms = d.pop("initial_backoff_ms")

        backoff_multiplier = d.pop("backoff_multiplier")

        max_backoff_ms = d.pop("max_backoff_ms")

        jitter = d.pop("jitter")

        retry_policy_settings = cls(
            max_attempts=max_attempts,
            initial_backoff_ms=initial_backoff_ms,
            backoff_multiplier=backoff_multiplier,
            max_backoff_ms=max_backoff_ms,
            jitter=jitter,
        )

        return retry_policy_settings
