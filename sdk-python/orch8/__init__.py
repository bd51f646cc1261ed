"""Orch8 Python SDK: `Orch8Client` / `AsyncOrch8Client` and the `Worker` runtime."""

import logging as _logging

from ._generated import SPEC_SHA256, SPEC_VERSION
from ._http import RetryPolicy
from ._version import USER_AGENT, __version__
from .async_client import AsyncOrch8Client
from .client import Orch8Client
from .errors import (
    AuthError,
    ConflictError,
    ForbiddenError,
    LeaseLostError,
    NotFoundError,
    Orch8Error,
    PermanentError,
    RateLimitedError,
    RetryableError,
    TaskCancelledError,
    UnavailableError,
    ValidationError,
    Yield,
    error_for_status,
    is_outage,
    is_retryable_status,
)
from .waiting import DEFAULT_WAIT_TIMEOUT_MS, WAIT_ROUND_MS, WaitTimeoutError
from .worker import (
    Backoff,
    ErrorEvent,
    PollEvent,
    TaskAbandonedEvent,
    TaskCompleteEvent,
    TaskContext,
    TaskFailEvent,
    TaskStartEvent,
    Worker,
    WorkerStats,
)

# P-SDK-22: a library logs through `orch8.*` and leaves output to the application.
_logging.getLogger("orch8").addHandler(_logging.NullHandler())
# httpx logs every request (every long-poll) at INFO; quiet it unless the app configured it.
_httpx = _logging.getLogger("httpx")
if _httpx.level == _logging.NOTSET and not _httpx.handlers:
    _httpx.setLevel(_logging.WARNING)

__all__ = [
    "DEFAULT_WAIT_TIMEOUT_MS",
    "SPEC_SHA256",
    "SPEC_VERSION",
    "USER_AGENT",
    "WAIT_ROUND_MS",
    "AsyncOrch8Client",
    "AuthError",
    "Backoff",
    "ConflictError",
    "ErrorEvent",
    "ForbiddenError",
    "LeaseLostError",
    "NotFoundError",
    "Orch8Client",
    "Orch8Error",
    "PermanentError",
    "PollEvent",
    "RateLimitedError",
    "RetryPolicy",
    "RetryableError",
    "TaskAbandonedEvent",
    "TaskCancelledError",
    "TaskCompleteEvent",
    "TaskContext",
    "TaskFailEvent",
    "TaskStartEvent",
    "UnavailableError",
    "ValidationError",
    "WaitTimeoutError",
    "Worker",
    "WorkerStats",
    "Yield",
    "__version__",
    "error_for_status",
    "is_outage",
    "is_retryable_status",
]
