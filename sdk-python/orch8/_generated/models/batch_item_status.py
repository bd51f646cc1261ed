from typing import Literal

BatchItemStatus = Literal["completed", "error", "failed", "requeued"]

BATCH_ITEM_STATUS_VALUES: set[BatchItemStatus] = {
    "completed",
    "error",
    "failed",
    "requeued",
}


def check_batch_item_status(value: str) -> BatchItemStatus:
    if value in BATCH_ITEM_STATUS_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {BATCH_ITEM_STATUS_VALUES!r}"
    )
