"""The worker's log lines (P-SDK-31): each one an event of the protocol's table, its name and
fields in the record's `extra`, its cause at the end of the message (P-SDK-22)."""

from __future__ import annotations

import logging
from typing import Any

from ..errors import Orch8Error, is_outage

log = logging.getLogger("orch8.worker")

DEBUG, INFO, WARNING, ERROR = logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR


def cause_text(exc: BaseException) -> str:
    """`HTTP 413 payload_too_large: <detail>`, `connection_error: <innermost cause>`, or
    `<exception type>: <message>`: the same wording in every SDK."""
    if isinstance(exc, Orch8Error):
        if exc.status:
            code = exc.code or f"http_{exc.status}"
            return (
                f"HTTP {exc.status} {code}: {exc.detail}"
                if exc.detail
                else f"HTTP {exc.status} {code}"
            )
        return f"{exc.code or 'connection_error'}: {exc.detail}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def answer_fields(exc: BaseException) -> dict[str, Any]:
    """`status` and `code` of the answer behind an error (none for a transport error)."""
    if not isinstance(exc, Orch8Error):
        return {}
    if exc.status:
        return {"status": exc.status, "code": exc.code or f"http_{exc.status}"}
    return {"code": exc.code} if exc.code else {}


def call_event(exc: BaseException) -> str:
    """A failed call is an `outage` (P-SDK-16) or else `refused`."""
    return "outage" if is_outage(exc) else "refused"


def emit(
    level: int,
    event: str,
    message: str,
    extra: dict[str, Any],
    cause: str | None,
    exc_info: BaseException | None = None,
) -> None:
    if not log.isEnabledFor(level):
        return
    if cause:
        extra["cause"] = cause
        message = f"{message}: {cause}"
    log.log(level, "orch8: %s", message, extra={"event": event, **extra}, exc_info=exc_info)
