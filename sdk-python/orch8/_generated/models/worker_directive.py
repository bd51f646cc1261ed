from typing import Literal

WorkerDirective = Literal["quiet", "running", "terminate"]

WORKER_DIRECTIVE_VALUES: set[WorkerDirective] = {
    "quiet",
    "running",
    "terminate",
}


def check_worker_directive(value: str) -> WorkerDirective:
    if value in WORKER_DIRECTIVE_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {WORKER_DIRECTIVE_VALUES!r}"
    )
