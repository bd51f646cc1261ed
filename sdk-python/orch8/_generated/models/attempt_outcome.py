from typing import Literal

AttemptOutcome = Literal[
    "cancelled",
    "completed",
    "failed",
    "lease_expired",
    "released",
    "running",
    "worker_lost",
]

ATTEMPT_OUTCOME_VALUES: set[AttemptOutcome] = {
    "cancelled",
    "completed",
    "failed",
    "lease_expired",
    "released",
    "running",
    "worker_lost",
}


def check_attempt_outcome(value: str) -> AttemptOutcome:
    if value in ATTEMPT_OUTCOME_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {ATTEMPT_OUTCOME_VALUES!r}"
    )
