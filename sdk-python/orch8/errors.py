"""Client errors mapped from problem codes (protocol section 12) and handler error types."""

from __future__ import annotations

import warnings
from typing import Any

import httpx

# P-SDK-16: the answers that mean "the server is out, try again later".
OUTAGE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


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
        retry_after_ms: float | None = None,
        problem: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.code = code
        self.title = title
        self.errors = errors or []
        self.retry_after_ms = retry_after_ms  # the answer's Retry-After, when it had one
        self.problem = problem

    @property
    def retry_after(self) -> float | None:
        """Deprecated: Retry-After in seconds; use `retry_after_ms`."""
        return None if self.retry_after_ms is None else self.retry_after_ms / 1000

    def __str__(self) -> str:
        # P-SDK-22: the text names its cause, HTTP status and problem code.
        cause = " ".join(str(p) for p in (self.status, self.code) if p)
        return f"{self.detail} ({cause})" if cause else self.detail


class NotFoundError(Orch8Error):
    """404 `not_found`: no such task or worker."""


class LeaseLostError(Orch8Error):
    """409 `lease_lost`: the lease is no longer current (P-LEASE-3)."""


class TaskCancelledError(Orch8Error):
    """409 `task_cancelled`: the task was cancelled (P-CANCEL-2)."""


class ConflictError(Orch8Error):
    """409 `invalid_state`: the operation does not fit the task's state."""


class ValidationError(Orch8Error):
    """400/413/415/422/431: the request was rejected as malformed or invalid (P-ERR-2/5)."""


class AuthError(Orch8Error):
    """401 `unauthorized`: API key missing or wrong (P-AUTH-1)."""


class ForbiddenError(Orch8Error):
    """403 `forbidden`: the key's role, tenant or scope does not allow the call (P-AUTH-3)."""


class RateLimitedError(Orch8Error):
    """429 `rate_limited`: slow down, honour `retry_after`."""


class UnavailableError(Orch8Error):
    """503 `unavailable`, 408 `request_timeout`, or a network failure (`connection_error`)."""


_BY_CODE: dict[str, type[Orch8Error]] = {
    "malformed_json": ValidationError,
    "payload_too_large": ValidationError,
    "unsupported_media_type": ValidationError,
    "validation_error": ValidationError,
    "payload_too_deep": ValidationError,  # P-ERR-5
    "unsupported_value": ValidationError,  # P-ERR-5
    "headers_too_large": ValidationError,  # P-HTTP-1
    "request_timeout": UnavailableError,  # P-HTTP-2: an outage (P-SDK-16)
    "unauthorized": AuthError,
    "forbidden": ForbiddenError,  # P-SDK-24
    "not_found": NotFoundError,
    "lease_lost": LeaseLostError,
    "task_cancelled": TaskCancelledError,
    "invalid_state": ConflictError,
    "clock_not_controllable": ConflictError,  # P-CLOCK-1
    "rate_limited": RateLimitedError,
    "unavailable": UnavailableError,
}

# When a body carries no known code (e.g. a proxy's HTML page) the status decides.
_BY_STATUS: dict[int, type[Orch8Error]] = {
    400: ValidationError,
    401: AuthError,
    403: ForbiddenError,
    404: NotFoundError,
    408: UnavailableError,  # an outage (P-SDK-16)
    409: ConflictError,
    413: ValidationError,
    415: ValidationError,
    422: ValidationError,
    429: RateLimitedError,
    431: ValidationError,
    502: UnavailableError,
    503: UnavailableError,
    504: UnavailableError,
}


def is_outage(cause: BaseException | int) -> bool:
    """P-SDK-16, the ONE outage classifier: refused/reset connection, timeout, 408, 429, 5xx.

    It decides the client's automatic retries (P-SDK-2), the worker's poll and register
    backoff (P-SDK-9) and result re-sends (P-SDK-12). `cause` is a status or an exception.
    """
    if isinstance(cause, int):
        return cause in OUTAGE_STATUSES
    if isinstance(cause, httpx.TransportError):
        return True
    if isinstance(cause, Orch8Error):
        if cause.status is None:
            return cause.code == "connection_error"
        return cause.status in OUTAGE_STATUSES
    return False


def refusal(cause: BaseException) -> str | None:
    """P-SDK-24: `403 forbidden: <detail>` when the server refused the key (401/403), else None.

    A refused key is not an outage, yet a worker keeps trying: the key may be fixed on the
    server (SIGHUP) while it runs.
    """
    if not isinstance(cause, (AuthError, ForbiddenError)):
        return None
    said = " ".join(str(part) for part in (cause.status, cause.code) if part)
    return f"{said}: {cause.detail}"


def error_class(status: int, code: str | None) -> type[Orch8Error]:
    """The exception type for a problem `code` (section 12), falling back on the status."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    return _BY_STATUS.get(status, Orch8Error)


# --- errors a handler raises to decide how its attempt fails (P-SDK-6) ---------------------


class RetryableError(Exception):
    """Fail the attempt retryably (P-SDK-20); `retry_after_ms` replaces the server's backoff."""

    def __init__(
        self,
        message: str = "retryable error",
        *,
        retry_after_ms: int | None = None,
        code: str = "retryable_error",
        details: dict[str, Any] | None = None,
        checkpoint: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        if retry_after is not None:
            warnings.warn(
                "RetryableError: retry_after (seconds) is deprecated; use retry_after_ms",
                DeprecationWarning,
                stacklevel=2,
            )
            if retry_after_ms is None:
                retry_after_ms = round(retry_after * 1000)
        self.retry_after_ms = retry_after_ms
        self.code = code
        self.details = details
        self.checkpoint = checkpoint

    @property
    def retry_after(self) -> float | None:
        """Deprecated: the delay in seconds; use `retry_after_ms`."""
        return None if self.retry_after_ms is None else self.retry_after_ms / 1000


class PermanentError(Exception):
    """Fail the task permanently at once, whatever attempts remain (P-RETRY-5, P-SDK-20)."""

    def __init__(
        self,
        message: str = "permanent error",
        *,
        code: str = "permanent_error",
        details: dict[str, Any] | None = None,
        checkpoint: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.details = details
        self.checkpoint = checkpoint


class Yield(Exception):
    """Give the task back to be run again later, without spending an attempt (P-SDK-32).

    The worker releases the task with `checkpoint` (stored and handed to the next claim,
    P-CKPT-1; None keeps the one stored) after `delay_ms` (clamped to 0..86,400,000).
    """

    def __init__(self, checkpoint: dict[str, Any] | None = None, *, delay_ms: int = 0) -> None:
        if checkpoint is not None and not isinstance(checkpoint, dict):
            # The contract's checkpoint is a JSON object; refused here, inside the handler,
            # the attempt fails as unhandled_error instead of the release failing unseen.
            raise TypeError(f"Yield checkpoint must be a dict, not {type(checkpoint).__name__}")
        super().__init__(f"task yielded (delay_ms={delay_ms})")
        self.checkpoint = checkpoint
        self.delay_ms = delay_ms


def is_retryable_status(status: int) -> bool:
    """P-SDK-6 classifier for a handler's downstream calls: 408, 429, 5xx retryable."""
    return status in (408, 429) or 500 <= status <= 599


def error_for_status(
    status: int,
    message: str | None = None,
    *,
    retry_after_ms: int | None = None,
    retry_after: float | None = None,
) -> RetryableError | PermanentError:
    """The handler error to raise for a failed downstream HTTP call with this status."""
    text = message or f"upstream answered HTTP {status}"
    details = {"http_status": status}
    if retry_after is not None and retry_after_ms is None:
        warnings.warn(
            "error_for_status: retry_after (seconds) is deprecated; use retry_after_ms",
            DeprecationWarning,
            stacklevel=2,
        )
        retry_after_ms = round(retry_after * 1000)
    if is_retryable_status(status):
        return RetryableError(text, retry_after_ms=retry_after_ms, details=details)
    return PermanentError(text, details=details)
