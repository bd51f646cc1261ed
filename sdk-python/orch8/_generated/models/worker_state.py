from typing import Literal

WorkerState = Literal["dead", "deregistered", "quiet", "running", "terminating"]

WORKER_STATE_VALUES: set[WorkerState] = {
    "dead",
    "deregistered",
    "quiet",
    "running",
    "terminating",
}


def check_worker_state(value: str) -> WorkerState:
    if value in WORKER_STATE_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {WORKER_STATE_VALUES!r}"
    )
