"""Orch8 Python SDK: `Orch8Client` / `AsyncOrch8Client` and the `Worker` runtime."""

from ._generated import SPEC_SHA256, SPEC_VERSION
from ._http import RetryPolicy
from ._version import USER_AGENT, __version__
from .async_client import AsyncOrch8Client
from .client import Orch8Client
from .errors import (
    AuthError,
    ConflictError,
    LeaseLostError,
    NotFoundError,
    Orch8Error,
    PermanentError,
    RateLimitedError,
    RetryableError,
    TaskCancelledError,
    UnavailableError,
    ValidationError,
    error_for_status,
    is_retryable_status,
)
from .worker import Backoff, TaskContext, Worker, WorkerStats

__all__ = [
    "SPEC_SHA256",
    "SPEC_VERSION",
    "USER_AGENT",
    "AsyncOrch8Client",
    "AuthError",
    "Backoff",
    "ConflictError",
    "LeaseLostError",
    "NotFoundError",
    "Orch8Client",
    "Orch8Error",
    "PermanentError",
    "RateLimitedError",
    "RetryPolicy",
    "RetryableError",
    "TaskCancelledError",
    "TaskContext",
    "UnavailableError",
    "ValidationError",
    "Worker",
    "WorkerStats",
    "__version__",
    "error_for_status",
    "is_retryable_status",
]
