from typing import Literal

StepStatus = Literal["cancelled", "completed", "failed", "pending", "running"]

STEP_STATUS_VALUES: set[StepStatus] = {
    "cancelled",
    "completed",
    "failed",
    "pending",
    "running",
}


def check_step_status(value: str) -> StepStatus:
    if value in STEP_STATUS_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {STEP_STATUS_VALUES!r}"
    )
