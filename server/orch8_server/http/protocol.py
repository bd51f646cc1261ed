"""uvicorn's httptools protocol with one socket write per response.

uvicorn writes a response's status line and headers when the app sends
`http.response.start`, then the body as a second write: two `send` syscalls (and two TCP
segments on loopback) per response. At batch 1 that was a third of the server's CPU
(py-spy: `RequestResponseCycle.send` 32% self, issue 15). Here the writes a response makes
within one event-loop turn are joined and sent once at the end of the turn: Starlette
sends start and body back to back, so a response is one write; nothing waits longer
than the current turn, and a close sends what is buffered first.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class _TurnBuffer:
    """The connection's transport, with writes joined until the end of the loop turn.
    Everything else (flow control, extra info, closing state) is the real transport."""

    __slots__ = ("_loop", "_pending", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(data)

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        if pending and not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class HttpProtocol(HttpToolsProtocol):
    """`uvicorn.Config(http=HttpProtocol)`: httptools parsing, one write per response."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_TurnBuffer(transport, self.loop))  # type: ignore[arg-type]
