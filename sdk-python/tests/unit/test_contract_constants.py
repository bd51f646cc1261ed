"""The worker's defaults and limits are the contract's (x-orch8-constants, openapi.sdk.json).

The client reads them from orch8/_generated/_constants.py; the worker's modules still name
their own copies, so this pins each copy to the generated value until they import it.
"""

from __future__ import annotations

import pytest

from orch8._generated import _constants as C
from orch8.worker import _completer, _queues, _report, _runtime, backoff, worker

PAIRS = [
    (_runtime.MAX_BATCH_SIZE, C.MAX_POLL_BATCH_SIZE),
    (_runtime.MAX_HANDLER_NAMES, C.MAX_POLL_HANDLERS),
    (_runtime.MIN_HEARTBEAT_MS, C.MIN_HEARTBEAT_INTERVAL_MS),
    (_completer.MAX_BATCH, C.MAX_COMPLETION_BATCH_ITEMS),
    (_queues.MAX_QUEUE_NAMES, C.MAX_QUEUE_NAMES),
    (_queues.MIN_WEIGHT, C.MIN_QUEUE_WEIGHT),
    (_queues.MAX_WEIGHT, C.MAX_QUEUE_WEIGHT),
    (_report.MAX_MESSAGE_BYTES, C.MAX_FAILURE_MESSAGE_BYTES),
    (_report.MAX_DETAILS_BYTES, C.MAX_FAILURE_DETAILS_BYTES),
    (_report.PREVIEW_BYTES, C.FAILURE_DETAILS_PREVIEW_BYTES),
    (backoff.MAX_WORKER_RETRY_AFTER_MS, C.WORKER_RETRY_AFTER_CAP_MS),
    (worker.DEFAULT_CONCURRENCY, C.DEFAULT_CONCURRENCY),
    (worker.DEFAULT_GRACE_PERIOD_MS, C.DEFAULT_GRACE_PERIOD_MS),
    (worker.DEFAULT_OUTAGE_BACKOFF_MS, (C.OUTAGE_BACKOFF_BASE_MS, C.OUTAGE_BACKOFF_CAP_MS)),
]


@pytest.mark.parametrize(("typed", "contract"), PAIRS)
def test_the_worker_uses_the_contract_constant(typed: object, contract: object) -> None:
    assert typed == contract
