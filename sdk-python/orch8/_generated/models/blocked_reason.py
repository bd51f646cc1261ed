from typing import Literal

BlockedReason = Literal["handler_cap", "held", "paused", "queue_cap", "unroutable"]

BLOCKED_REASON_VALUES: set[BlockedReason] = {
    "handler_cap",
    "held",
    "paused",
    "queue_cap",
    "unroutable",
}


def check_blocked_reason(value: str) -> BlockedReason:
    if value in BLOCKED_REASON_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {BLOCKED_REASON_VALUES!r}"
    )
