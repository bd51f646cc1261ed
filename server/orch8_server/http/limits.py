"""Request limits on the HTTP layer (P-HTTP-1 size, P-HTTP-2 time), below every route.

httptools (llhttp) bounds neither a request line nor the header fields: uvicorn gathered an
8 MB `Authorization` header or 20,000 fields into memory and handed them to the app, and a
client that sent half a request and stopped held its connection for ever (slow loris).
`uvicorn.Config(http=limited_protocol(settings, ...))` runs this subclass of the server's
protocol, which answers such requests with an RFC 9457 problem and closes the connection
before a route sees them:

- P-HTTP-1: a request line over 8 KiB, more than `--max-header-count` fields, or field
  names and values over `--max-header-bytes` in all -> 431 `headers_too_large`;
- P-HTTP-2: a request line and headers not all arrived `--header-timeout-ms` after the
  request's first byte, or a body not complete `--body-timeout-ms` after the headers (a
  deadline, not an idle timer: a body trickled a byte at a time is stopped too) -> 408
  `request_timeout`. A new connection that sends no byte within the header timeout is
  closed without an answer (no request was made).

The server is benchmarked on CPU per request, so the checks ride on work uvicorn does
anyway. A request whose line, headers and body arrive in one read, which is nearly every
request, pays one extra call (`on_headers_complete`, a few comparisons) and a few
attribute reads per read; it arms no timer. Where a request stands is read off uvicorn's
own state after each read (its scope has no `method` until the headers are complete; its
cycle has `more_body` until the body is), so no per-header or per-message callback is
added. Timers exist only per connection (until its first byte) and for a request still
incomplete at the end of a read, the one case they are there for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from itertools import chain
from typing import TYPE_CHECKING, Any

import httptools
import orjson
from uvicorn.protocols.http.httptools_impl import STATUS_LINE

from orch8_server.http.protocol import HttpProtocol
from orch8_server.problems import Problem

if TYPE_CHECKING:
    from orch8_server.config import Settings

log = logging.getLogger("orch8.http")

MAX_REQUEST_LINE = 8192  # P-HTTP-1: bytes of `METHOD SP target SP HTTP/x.y`, fixed
# `len(method) + len(target) + _LINE_EXTRA` is the request line's length (two spaces and
# `HTTP/1.1`); a target alone longer than the limit is refused before the method is known.
_LINE_EXTRA = 10
# After a refusal the connection is half-closed and what the client still sends is read
# and dropped for this long: closing a socket with unread input sends a TCP reset, which
# can destroy the answer before the client reads it (a client still sending an 8 MB
# header would never see its 431).
_LINGER_S = 2.0

# What a timer is for.
_CONNECTION = 0  # a new connection: no byte of a request yet
_HEAD = 1  # request line and headers
_BODY = 2  # the body


class _Refused(Exception):
    """Raised from a parser callback after the refusal is written, to stop the parser."""


class LimitedHttpProtocol(HttpProtocol):
    """HttpProtocol (httptools, one write per response) with P-HTTP-1/2. Configure with
    `limited_protocol`, which sets the class attributes below from the settings."""

    max_header_count = 100
    max_header_bytes = 65_536
    header_timeout_s = 10.0
    body_timeout_s = 30.0
    # Counts the code of a refusal no route sees (orch8_problems_total).
    on_refused: Callable[[str], None] | None = None
    # A head that arrived within this many bytes breaks no size limit: nothing to add up.
    _small_head = min(MAX_REQUEST_LINE, max_header_bytes)

    _refused: bool
    _timer: asyncio.TimerHandle | None
    _timer_kind: int  # _CONNECTION, _HEAD or _BODY
    _timer_scope: Any  # the request (its scope) the timer is for
    _head_bytes: int  # bytes of the current request's head in earlier reads
    _read_len: int  # bytes of the read being parsed

    @classmethod
    def _head_cap(cls) -> int:
        # Raw bytes past which a head still incomplete must break a limit: the line, the
        # fields, ": " and CRLF per field, and room for optional whitespace. This bound is
        # what stops one huge field, which the parser reports only once it is complete.
        return MAX_REQUEST_LINE + cls.max_header_bytes + 8 * cls.max_header_count + 1024

    # -- connection ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._refused = False
        self._head_bytes = self._read_len = 0
        # P-HTTP-2: a connection that sends nothing is closed after the header timeout.
        self._timer = None
        self._arm(_CONNECTION, None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # lingering: drop what the client still sends
        # uvicorn's data_received, except that a refusal raised from a parser callback is
        # told apart from a malformed request (both come out as HttpParserError).
        self._unset_keepalive_if_required()
        self._read_len = len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            if not self._refused:  # else a callback refused the request: answered already
                msg = "Invalid HTTP request received."
                self.logger.warning(msg)
                self.send_400_response(msg)
            return
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self._cancel_timer()
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        scope: Any = self.scope  # (typed as a complete HTTPScope, which it is not yet)
        if scope is None:
            return  # no request began yet: the connection's timer runs on
        if "method" not in scope:  # this request's head is still incomplete
            if self._timer_scope is not scope:  # P-HTTP-2: from its first read
                self._head_bytes = 0
                self._arm(_HEAD, scope)
            self._head_bytes += len(data)
            too_large = self._too_large(headers_complete=False)
            if too_large is not None:
                self._refuse("headers_too_large", *too_large)
        elif self.cycle.more_body and not self.cycle.response_complete:  # body incomplete
            if self._timer_scope is not scope or self._timer_kind != _BODY:
                self._arm(_BODY, scope)
        elif self._timer is not None:  # complete (or answered): no deadline left
            self._cancel_timer()

    # -- parser callback -----------------------------------------------------------------

    def on_headers_complete(self) -> None:
        # P-HTTP-1, before uvicorn builds the scope and starts the app. A head that came
        # in fewer bytes than the smallest limit needs only the field count checked.
        if (
            len(self.headers) > self.max_header_count
            or self._head_bytes + self._read_len > self._small_head
        ):
            too_large = self._too_large(headers_complete=True)
            if too_large is not None:
                self._refuse("headers_too_large", *too_large)
                raise _Refused
        self._head_bytes = 0
        super().on_headers_complete()

    # -- limits --------------------------------------------------------------------------

    def _too_large(self, *, headers_complete: bool) -> tuple[str, str | None] | None:
        """P-HTTP-1: what the head breaks and the problem's `instance`, or None."""
        line = len(self.url) + _LINE_EXTRA
        if headers_complete:
            line += len(self.parser.get_method())
        if line > MAX_REQUEST_LINE:  # no instance: the path is what is too long
            return f"the request line is longer than {MAX_REQUEST_LINE} bytes", None
        if len(self.headers) > self.max_header_count:
            detail = f"more than {self.max_header_count} header fields"
        elif (not headers_complete and self._head_bytes > self._head_cap()) or sum(
            map(len, chain.from_iterable(self.headers))
        ) > self.max_header_bytes:
            detail = f"the header fields are longer than {self.max_header_bytes} bytes in all"
        else:
            return None
        return detail, self._path()

    def _arm(self, kind: int, scope: Any) -> None:
        if self._timer is not None:
            self._timer.cancel()
        delay = self.body_timeout_s if kind == _BODY else self.header_timeout_s
        self._timer = self.loop.call_later(delay, self._expired)
        self._timer_kind, self._timer_scope = kind, scope

    def _expired(self) -> None:
        # Every read brings the timer up to date, so it fires only for a request (or a
        # connection) that stood where it was armed for its whole delay.
        self._timer = None
        kind = self._timer_kind
        if self._refused or kind == _CONNECTION:  # the linger is over, or no request began
            if not self.transport.is_closing():
                self.transport.close()
            return
        if self.flow.read_paused:
            # uvicorn stopped reading (a pipelined request waits, or the app has not read
            # the body yet): the client is not the one stalling. Look again later.
            self._arm(kind, self._timer_scope)
            return
        if kind == _HEAD:
            ms = round(self.header_timeout_s * 1000)
            detail = f"the request line and headers did not arrive within {ms} ms"
        else:
            ms = round(self.body_timeout_s * 1000)
            detail = f"the request body did not arrive within {ms} ms of the headers"
        self._refuse("request_timeout", detail, self._path())

    def _refuse(self, code: str, detail: str, instance: str | None) -> None:
        """Answer `code` (408/431) as a problem, half-close, drop input for _LINGER_S, close."""
        head = self._in_head()
        self._refused = True
        self._cancel_timer()
        transport = self.transport
        if transport.is_closing():
            return
        cycle = self.cycle  # in the head: the previous request's; in the body: this one's
        if self.pipeline or (
            cycle is not None and (not cycle.response_complete if head else cycle.response_started)
        ):
            # An earlier request's answer is still owed on this connection, or this one's
            # has begun (the app answered without reading the body): an answer now would be
            # out of order. Close instead.
            transport.close()
            return
        problem = Problem(code, detail)
        client = f"{self.client[0]}:{self.client[1]}" if self.client else None
        log.info(
            "request refused",
            extra={"code": code, "status": problem.status, "detail": detail, "client": client},
        )
        if head:
            if self.on_refused is not None:
                self.on_refused(code)
        elif cycle is not None:
            # The app is waiting for the body: its receive() now reports a disconnect,
            # whatever it answers is dropped (endpoint.py's _read_body turns that into
            # this code, and problem_response counts it), and the 408 below is the answer.
            cycle.disconnected = True
            cycle.message_event.set()
        transport.write(self._answer(problem, instance))
        # The write above may sit in protocol.py's per-turn buffer, whose flush is already
        # scheduled with call_soon: the half-close, scheduled after it, follows the answer.
        self.loop.call_soon(self._half_close)
        self.flow.resume_reading()  # read (and drop) the rest
        self._timer = self.loop.call_later(_LINGER_S, self._expired)

    def _half_close(self) -> None:
        transport = self.transport
        if transport.is_closing():
            return
        if transport.can_write_eof():
            transport.write_eof()  # the client reads the answer, then EOF
        else:
            transport.close()

    def _path(self) -> str | None:
        """The request's path for the problem's `instance`, once its request line has
        surely arrived: fields began, or the parser read well past the target."""
        if (
            self._in_head()
            and not self.headers
            and self._head_bytes <= len(self.url) + _LINE_EXTRA + 64  # 64: method, CRLF
        ):
            return None
        try:
            path: bytes = httptools.parse_url(self.url).path or b""
        except httptools.HttpParserInvalidURLError:
            return None
        return path.decode("ascii", "replace") or None

    def _answer(self, problem: Problem, instance: str | None) -> bytes:
        body = orjson.dumps(problem.body(instance))
        head = [STATUS_LINE[problem.status]]
        for name, value in self.server_state.default_headers:  # server, date (as uvicorn)
            head += [name, b": ", value, b"\r\n"]
        head += [
            b"content-type: application/problem+json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
            body,
        ]
        return b"".join(head)

    def _in_head(self) -> bool:
        """Whether the current request's head is incomplete: uvicorn puts `method` in the
        scope once the head is accepted."""
        scope: Any = self.scope
        return scope is not None and "method" not in scope

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def limited_protocol(
    settings: Settings, on_refused: Callable[[str], None] | None = None
) -> type[LimitedHttpProtocol]:
    """The protocol class for `uvicorn.Config(http=...)` with the limits of `settings`."""
    return type(
        "LimitedHttpProtocol",
        (LimitedHttpProtocol,),
        {
            "max_header_count": settings.max_header_count,
            "max_header_bytes": settings.max_header_bytes,
            "_small_head": min(MAX_REQUEST_LINE, settings.max_header_bytes),
            "header_timeout_s": settings.header_timeout_ms / 1000,
            "body_timeout_s": settings.body_timeout_ms / 1000,
            "on_refused": staticmethod(on_refused) if on_refused is not None else None,
        },
    )
