"""Durations are integer milliseconds with an `_ms` suffix (decisions C, issue 19).

The float-second keywords of 0.1 stay accepted for one minor version, with a
DeprecationWarning naming the replacement.
"""

from __future__ import annotations

import warnings
from typing import Any


def ms_option(
    owner: str, name_ms: str, value_ms: Any, old_name: str, old_seconds: Any, default: Any
) -> Any:
    """The value of `name_ms`, taking the deprecated seconds keyword `old_name` if given."""
    if old_seconds is None:
        return default if value_ms is None else value_ms
    if value_ms is not None:
        raise TypeError(f"{owner}: give {name_ms}, not both {name_ms} and {old_name}")
    warnings.warn(
        f"{owner}: {old_name} (float seconds) is deprecated; use {name_ms} (integer milliseconds)",
        DeprecationWarning,
        stacklevel=3,
    )
    if isinstance(old_seconds, tuple):
        return tuple(round(float(s) * 1000) for s in old_seconds)
    return round(float(old_seconds) * 1000)
