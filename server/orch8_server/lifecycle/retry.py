"""Retry policy and backoff (P-RETRY-2)."""

from __future__ import annotations

import random
from typing import Any

DEFAULT_POLICY: dict[str, Any] = {
    "max_attempts": 3,
    "initial_backoff_ms": 1000,
    "backoff_multiplier": 2.0,
    "max_backoff_ms": 300_000,
    "jitter": 0.2,
}


def effective_policy(given: dict[str, Any] | None) -> dict[str, Any]:
    policy = dict(DEFAULT_POLICY)
    if given:
        policy.update(given)
    policy["max_attempts"] = int(policy["max_attempts"])
    policy["initial_backoff_ms"] = int(policy["initial_backoff_ms"])
    policy["max_backoff_ms"] = int(policy["max_backoff_ms"])
    policy["backoff_multiplier"] = float(policy["backoff_multiplier"])
    policy["jitter"] = float(policy["jitter"])
    return policy


def backoff_ms(policy: dict[str, Any], attempt: int, rng: random.Random = random._inst) -> int:
    """Delay before attempt `attempt + 1`, after `attempt` failed (P-RETRY-2)."""
    base = policy["initial_backoff_ms"] * policy["backoff_multiplier"] ** max(0, attempt - 1)
    capped = min(float(policy["max_backoff_ms"]), base)
    return int(capped * (1.0 - policy["jitter"] * rng.random()))
