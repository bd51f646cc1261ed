from typing import Literal

InstanceStatus = Literal["cancelled", "completed", "failed", "running"]

INSTANCE_STATUS_VALUES: set[InstanceStatus] = {
    "cancelled",
    "completed",
    "failed",
    "running",
}


def check_instance_status(value: str) -> InstanceStatus:
    if value in INSTANCE_STATUS_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {INSTANCE_STATUS_VALUES!r}"
    )
