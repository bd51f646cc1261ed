from typing import Literal

ClockMode = Literal["system", "test"]

CLOCK_MODE_VALUES: set[ClockMode] = {
    "system",
    "test",
}


def check_clock_mode(value: str) -> ClockMode:
    if value in CLOCK_MODE_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {CLOCK_MODE_VALUES!r}"
    )
