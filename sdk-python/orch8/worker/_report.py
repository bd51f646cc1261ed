"""Failure reports that always land (P-SDK-27).

A 2 MiB exception message, details or checkpoint used to make the fail call itself get 413;
the worker gave the task up as lease lost and it sat `running` until its lease died, with
the real error nowhere. Here a report is bounded before it is sent, and a report the server
still refuses is re-sent once in a form that always fits.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import Orch8Error
from .context import TaskContext
from .observe import Observer

MAX_MESSAGE_BYTES = 16_384  # P-SDK-27: of UTF-8 in a fail's `error`
MAX_DETAILS_BYTES = 65_536  # P-SDK-27: of JSON text in a fail's `details`
PREVIEW_BYTES = 4_096  # P-SDK-27: what a replaced `details` keeps of its JSON text
NOT_REFUSALS = frozenset({408, 409, 429})  # outages (P-SDK-16) and lease answers (P-SDK-5)

Send = Callable[[dict[str, Any]], Awaitable[object]]


def cut_utf8(text: str, limit: int) -> tuple[str, int]:
    """`text` cut to at most `limit` bytes of UTF-8, never inside a character; its full size.

    Lone surrogates (which Python strings may hold, and no UTF-8 encoder takes) become `?`.
    """
    raw = text.encode("utf-8", "replace")
    if len(raw) <= limit:
        return raw.decode("utf-8"), len(raw)
    # A character cut in two leaves only its first bytes at the end: `ignore` drops them.
    return raw[:limit].decode("utf-8", "ignore"), len(raw)


def bound_message(text: str) -> str:
    """P-SDK-27: NUL made U+FFFD (P-ERR-5 refuses it); at most 16,384 bytes, then
    ` [truncated from N bytes]`."""
    kept, size = cut_utf8(text.replace("\x00", "\ufffd"), MAX_MESSAGE_BYTES)
    return kept if size <= MAX_MESSAGE_BYTES else f"{kept} [truncated from {size} bytes]"


def bound_details(details: dict[str, Any] | None) -> dict[str, Any] | None:
    """P-SDK-27: details whose JSON text is over 65,536 bytes become a preview of it."""
    if details is None:
        return None
    # The text the request carries (httpx: compact, non-ASCII as UTF-8, as TS and Go send).
    text = json.dumps(details, ensure_ascii=False, separators=(",", ":"))
    preview, size = cut_utf8(text, PREVIEW_BYTES)
    if size <= MAX_DETAILS_BYTES:
        return details
    return {"truncated": True, "bytes": size, "preview": preview}


def is_refusal(exc: Orch8Error) -> bool:
    """P-SDK-27: the server refused the report itself (a 4xx other than 408, 409, 429)."""
    return exc.status is not None and 400 <= exc.status < 500 and exc.status not in NOT_REFUSALS


class ReportRefused(Orch8Error):
    """A failure report refused twice: as sent, then without checkpoint (P-SDK-27)."""

    def __init__(self, first: Orch8Error, second: Orch8Error) -> None:
        super().__init__(
            f"failure report refused twice: first {first}; then, without checkpoint, {second}",
            status=second.status,
            code=second.code,
        )
        self.first = first
        self.second = second

    def __str__(self) -> str:
        return self.detail  # it names both refusals' status and code already


class Report:
    """One failure report (a FailRequest body) for one task, sent until it lands or is refused.

    Kept across the re-sends of P-SDK-9, so after a refusal only its fallback goes out.
    """

    def __init__(self, ctx: TaskContext, body: dict[str, Any], observer: Observer) -> None:
        self.ctx = ctx
        self.body = {**body, "details": bound_details(body.get("details"))}
        self.observer = observer
        self.refusal: Orch8Error | None = None

    async def send(self, send: Send) -> None:
        """Send the report with `send(body)`; ReportRefused after a second refusal."""
        while True:
            try:
                await send(self.body)
                return
            except Orch8Error as exc:
                if not is_refusal(exc):
                    raise
                if self.refusal is not None:
                    raise ReportRefused(self.refusal, exc) from exc
                self.refusal = exc
                self.observer.error("fail", exc)
                # Code and message unchanged, so the real error is stored; what may not fit
                # (the checkpoint, the details) gives way to what the refusal was.
                self.body = {
                    **self.body,
                    "checkpoint": None,
                    "details": {"report_refused": {"status": exc.status, "code": exc.code}},
                }
                then = "re-sending it once without checkpoint, details replaced by report_refused"
                self.observer.call_failed("fail", exc, "failure report", then, self.ctx)
