"""RFC 9457 problems with stable codes (P-ERR-1).

Every layer raises `Problem`; the HTTP layer renders it. Codes are part of the contract:
never rename one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orch8_server._generated.models import FieldProblem, ItemProblem
    from orch8_server._generated.models import Problem as ProblemBody

TITLES = {
    "malformed_json": "Malformed JSON",
    "validation_error": "Validation failed",
    "unsupported_media_type": "Unsupported media type",
    "payload_too_large": "Payload too large",
    "payload_too_deep": "Payload too deep",
    "unsupported_value": "Unsupported value",
    "headers_too_large": "Request header fields too large",
    "request_timeout": "Request timeout",
    "unauthorized": "Unauthorized",
    "forbidden": "Forbidden",
    "not_found": "Not found",
    "method_not_allowed": "Method not allowed",
    "lease_lost": "Lease lost",
    "task_cancelled": "Task cancelled",
    "invalid_state": "Invalid state",
    "clock_not_controllable": "Clock not controllable",
    "rate_limited": "Rate limited",
    "unavailable": "Service unavailable",
    "internal": "Internal error",
}

STATUS = {
    "malformed_json": 400,
    "validation_error": 422,
    "unsupported_media_type": 415,
    "payload_too_large": 413,
    "payload_too_deep": 400,
    "unsupported_value": 400,
    "headers_too_large": 431,
    "request_timeout": 408,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "lease_lost": 409,
    "task_cancelled": 409,
    "invalid_state": 409,
    "clock_not_controllable": 409,
    "rate_limited": 429,
    "unavailable": 503,
    "internal": 500,
}


class Problem(Exception):
    """A protocol-level failure with a stable machine code."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        errors: list[FieldProblem] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.code = code
        self.status = STATUS[code]
        self.detail = detail
        self.errors = errors or []
        self.headers = headers or {}

    def body(self, instance: str | None = None) -> ProblemBody:
        body: ProblemBody = {
            "type": f"urn:orch8:problem:{self.code}",
            "title": TITLES[self.code],
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
            "errors": self.errors,
        }
        if instance:
            body["instance"] = instance
        return body

    def item(self) -> ItemProblem:
        """The short form used for one item of a batch (P-BATCH-1)."""
        return {"code": self.code, "status": self.status, "detail": self.detail}


def not_found(kind: str, ident: str) -> Problem:
    return Problem("not_found", f"no {kind} {ident}")


def lease_lost(task_id: str, lease: str | None) -> Problem:
    which = f"lease {lease}" if lease else "the task's lease"
    return Problem("lease_lost", f"{which} is no longer current for {task_id}")


def task_cancelled(task_id: str) -> Problem:
    return Problem("task_cancelled", f"task {task_id} was cancelled")
