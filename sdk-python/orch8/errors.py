"""Client errors mapped from problem codes (protocol section 12) and handler error types."""

from __future__ import annotations

from typing import Any


class Orch8Error(Exception):
    """Any error answered by the server or met on the way to it."""

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        code: str | None = None,
        title: str | None = None,
        errors: list[dict[str, Any]] | None = None,
        retry_after: float | None = None,
        problem: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.code = code
        self.title = title
        self.errors = errors or []
        self.retry_after = retry_after
        self.problem = problem

    def __str__(self) -> str:
        where = f" ({self.status} {self.code})" if self.status else f" ({self.code})"
        return f"{self.detail}{where if self.code or self.status else ''}"


class NotFoundError(Orch8Error):
    """404 `not_found`: no such task or worker."""


class LeaseLostError(Orch8Error):
    """409 `lease_lost`: the lease is no longer current (P-LEASE-3)."""


class TaskCancelledError(Orch8Error):
    """409 `task_cancelled`: the task was cancelled (P-CANCEL-2)."""


class ConflictError(Orch8Error):
    """409 `invalid_state`: the operation does not fit the task's state."""


class ValidationError(Orch8Error):
    """400/413/415/422: the request was rejected as malformed or invalid (P-ERR-2)."""


class AuthError(Orch8Error):
    """401 `unauthorized`: API key missing or wrong (P-AUTH-1)."""


class RateLimitedError(Orch8Error):
    """429 `rate_limited`: slow down, honour `retry_after`."""


class UnavailableError(Orch8Error):
    """503 `unavailable`, or a network failure (code `connection_error`)."""


_BY_CODE: dict[str, type[Orch8Error]] = {
    "malformed_json": ValidationError,
    "payload_too_large": ValidationError,
    "unsupported_media_type": ValidationError,
    "validation_error": ValidationError,
    "unauthorized": AuthError,
    "not_found": NotFoundError,
    "lease_lost": LeaseLostError,
    "task_cancelled": TaskCancelledError,
    "invalid_state": ConflictError,
    "rate_limited": RateLimitedError,
    "unavailable": UnavailableError,
}

# When a body carries no known code (e.g. a proxy's HTML page) the status decides.
_BY_STATUS: dict[int, type[Orch8Error]] = {
    400: ValidationError,
    401: AuthError,
    404: NotFoundError,
    409: ConflictError,
    413: ValidationError,
    415: ValidationError,
    422: ValidationError,
    429: RateLimitedError,
    502: UnavailableError,
    503: UnavailableError,
    504: UnavailableError,
}


def error_class(status: int, code: str | None) -> type[Orch8Error]:
    """The exception type for a problem `code` (section 12), falling back on the status."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    return _BY_STATUS.get(status, Orch8Error)


# --- errors a handler raises to decide how its attempt fails (P-SDK-6) ---------------------


class RetryableError(Exception):
    """Fail the attempt retryably; `retry_after` (seconds) replaces the server's backoff."""

    def __init__(
        self,
        message: str = "retryable error",
        *,
        retry_after: float | None = None,
        code: str = "retryable_error",
        details: dict[str, Any] | None = None,
        checkpoint: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.code = code
        self.details = details
        self.checkpoint = checkpoint


class PermanentError(Exception):
    """Fail the task permanently at once, whatever attempts remain (P-RETRY-5)."""

    def __init__(
        self,
        message: str = "permanent error",
        *,
        code: str = "permanent_error",
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.details = details


def is_retryable_status(status: int) -> bool:
    """P-SDK-6 classifier: 408, 429 and 5xx are retryable; any other 4xx is permanent."""
    return status in (408, 429) or 500 <= status <= 599


def error_for_status(
    status: int, message: str | None = None, *, retry_after: float | None = None
) -> RetryableError | PermanentError:
    """The handler error to raise for a failed downstream HTTP call with this status."""
    text = message or f"upstream answered HTTP {status}"
    details = {"http_status": status}
    if is_retryable_status(status):
        return RetryableError(text, retry_after=retry_after, details=details)
    return PermanentError(text, details=details)
