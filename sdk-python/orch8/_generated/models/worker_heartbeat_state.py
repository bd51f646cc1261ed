from typing import Literal

WorkerHeartbeatState = Literal["quiet", "running", "terminating"]

WORKER_HEARTBEAT_STATE_VALUES: set[WorkerHeartbeatState] = {
    "quiet",
    "running",
    "terminating",
}


def check_worker_heartbeat_state(value: str) -> WorkerHeartbeatState:
    if value in WORKER_HEARTBEAT_STATE_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {WORKER_HEARTBEAT_STATE_VALUES!r}"
    )
