from typing import Literal

StepSemantics = Literal["first_to_succeed"]

STEP_SEMANTICS_VALUES: set[StepSemantics] = {
    "first_to_succeed",
}


def check_step_semantics(value: str) -> StepSemantics:
    if value in STEP_SEMANTICS_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {STEP_SEMANTICS_VALUES!r}"
    )
