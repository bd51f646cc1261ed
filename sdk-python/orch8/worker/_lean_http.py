"""The worker's own HTTP/1.1 transport for plain-http servers: asyncio streams, keep-alive.

Through httpx's default transport (httpcore on anyio) a request cost the worker about 490 us
of CPU here, against 84 us for the same exchange written on asyncio streams (2026-11-28,
GET against the reference server, `bench/results/2026-11-28-python-lean-http.md`). A worker
at batch 100 sends two requests per 100 tasks, so that was ~10 us per task of a worker that
spent ~50. This transport sits under the worker's own httpx client, so httpx still builds
each request and its response, and the client's retries, errors and timeouts are unchanged.

It is used only when the worker makes its client (no `client=` given), the URL is `http://`
and no proxy variable (HTTP_PROXY, ALL_PROXY, NO_PROXY) applies to it: https and proxies
stay with httpx. Errors are httpx's (ConnectError, ReadTimeout, RemoteProtocolError...), the
OS error chained as their cause, so a log says what failed as it did through httpcore.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import urllib.request
from typing import Any

import httpx

MAX_HEAD = 64 * 1024  # status line and headers of one answer
MAX_IDLE = 8  # kept-alive connections per host and port


def usable_for(base_url: str) -> bool:
    """Whether the worker may send to `base_url` through LeanTransport."""
    url = httpx.URL(base_url)
    if url.scheme != "http" or not url.host:
        return False
    proxies = urllib.request.getproxies_environment()
    if not proxies.get("http") and not proxies.get("all"):
        return True
    # NO_PROXY as urllib reads it (a host, a domain suffix or *); not in typeshed's stubs.
    return bool(urllib.request.proxy_bypass_environment(url.host, proxies))  # type: ignore[attr-defined]


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def stale(self) -> bool:
        """Closed by the server while idle (its keep-alive timeout): never reused."""
        return self.reader.at_eof() or self.writer.transport.is_closing()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


def _close_opened(opening: asyncio.Future[Any]) -> None:
    """A connection that opened after its caller stopped waiting is closed."""
    if not opening.cancelled() and opening.exception() is None:
        opening.result()[1].close()


class _NoAnswer(Exception):
    """A kept-alive connection ended before any byte of the answer: the request may be sent
    once more on a new connection (the server closed it while it was idle)."""


class LeanTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 requests with bodies in memory over kept-alive asyncio connections."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[_Conn]] = {}
        self._open: set[_Conn] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(
                f"LeanTransport sends http only, not {url}", request=request
            )
        key = (url.host, url.port or 80)
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        body = await request.aread()
        head = _head(request, body)
        idle = self._idle.setdefault(key, [])
        while idle:
            conn = idle.pop()
            if conn.stale():
                self._drop(conn)
                continue
            try:
                return await self._exchange(conn, key, request, head, body, timeouts, reused=True)
            except _NoAnswer:
                continue  # closed under us while idle: the next idle one, or a new one
        conn = await self._connect(key, request, timeouts.get("connect"))
        return await self._exchange(conn, key, request, head, body, timeouts, reused=False)

    async def aclose(self) -> None:
        for conn in list(self._open):
            self._drop(conn)
        self._idle.clear()

    async def _connect(
        self, key: tuple[str, int], request: httpx.Request, timeout: float | None
    ) -> _Conn:
        # asyncio.wait, not wait_for: before Python 3.12, wait_for returns the result of an
        # inner step that finished as the caller was cancelled, swallowing the cancel (a
        # heartbeat loop cancelled at shutdown then never ended).
        opening = asyncio.ensure_future(asyncio.open_connection(*key, limit=MAX_HEAD))
        try:
            done, _ = await asyncio.wait({opening}, timeout=timeout)
        except BaseException:
            opening.cancel()
            opening.add_done_callback(_close_opened)
            raise
        if not done:
            opening.cancel()
            opening.add_done_callback(_close_opened)
            raise httpx.ConnectTimeout(f"connect to {key[0]}:{key[1]} timed out", request=request)
        try:
            reader, writer = opening.result()
        except OSError as err:
            # asyncio words a refusal "Connect call failed (host, port)": given the errno's
            # text, as httpcore gives it. Other errors (a DNS failure's gaierror) as they are.
            cause: OSError = err
            if isinstance(err, ConnectionRefusedError) and err.errno:
                cause = ConnectionRefusedError(err.errno, os.strerror(err.errno))
            raise httpx.ConnectError(str(cause), request=request) from cause
        conn = _Conn(reader, writer)
        self._open.add(conn)
        return conn

    def _drop(self, conn: _Conn) -> None:
        self._open.discard(conn)
        conn.close()

    async def _exchange(
        self,
        conn: _Conn,
        key: tuple[str, int],
        request: httpx.Request,
        head: bytes,
        body: bytes,
        timeouts: dict[str, Any],
        reused: bool,
    ) -> httpx.Response:
        answered = [False]  # whether any byte of the answer came
        # The read timeout aborts the connection from a timer rather than cancelling this
        # task (see _connect: no wait_for), so a caller's cancel is never lost.
        expired = [False]

        def expire() -> None:
            expired[0] = True
            conn.writer.transport.abort()

        read_timeout = timeouts.get("read")
        timer = None
        if read_timeout is not None:
            timer = asyncio.get_running_loop().call_later(read_timeout, expire)
        try:
            status, headers, content, keep = await _send_and_read(
                conn, request.method, head, body, answered
            )
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as err:
            self._drop(conn)
            if expired[0]:
                raise httpx.ReadTimeout(
                    f"no answer from {key[0]}:{key[1]} in time", request=request
                ) from err
            if reused and not answered[0]:
                raise _NoAnswer from err
            if isinstance(
                err, ConnectionResetError | BrokenPipeError | asyncio.IncompleteReadError
            ):
                raise httpx.RemoteProtocolError(
                    "server disconnected without sending a complete response", request=request
                ) from err
            if isinstance(err, OSError):
                raise httpx.ReadError(str(err), request=request) from err
            raise httpx.RemoteProtocolError(f"malformed answer: {err}", request=request) from err
        except BaseException:  # cancelled (a shutdown aborts the long-poll): the server sees it go
            self._drop(conn)
            raise
        finally:
            if timer is not None:
                timer.cancel()
        if keep:
            idle = self._idle.setdefault(key, [])
            if len(idle) < MAX_IDLE:
                idle.append(conn)
            else:
                self._drop(conn)
        else:
            self._drop(conn)
        return httpx.Response(
            status, headers=headers, stream=httpx.ByteStream(content), request=request,
            extensions={"http_version": b"HTTP/1.1"},
        )  # fmt: skip


def _head(request: httpx.Request, body: bytes) -> bytes:
    lines = [f"{request.method} {request.url.raw_path.decode('ascii')} HTTP/1.1"]
    seen_length = False
    for name, value in request.headers.raw:
        low = name.lower()
        if low == b"content-length":
            seen_length = True
        elif low == b"transfer-encoding":
            continue  # the body is in memory: sent with its length
        lines.append(f"{name.decode('latin-1')}: {value.decode('latin-1')}")
    if body and not seen_length:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _send_and_read(
    conn: _Conn, method: str, head: bytes, body: bytes, answered: list[bool]
) -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
    """Status, headers, body and whether the connection may be reused, of one exchange."""
    conn.writer.write(head + body)
    await conn.writer.drain()  # at once unless the socket's buffer is full (a large body)
    reader = conn.reader
    while True:
        try:
            block = await reader.readuntil(b"\r\n\r\n")  # the status line and the headers
        except asyncio.IncompleteReadError as err:
            answered[0] = bool(err.partial)
            raise
        answered[0] = True
        first, _, rest = block[:-4].partition(b"\r\n")
        version, _, reason = first.decode("latin-1").partition(" ")
        if not version.startswith("HTTP/1.") or not reason[:3].isdigit():
            raise ValueError(f"not an HTTP/1.x status line: {first[:80]!r}")
        status = int(reason[:3])
        headers = []
        for line in rest.split(b"\r\n") if rest else ():
            name, sep, value = line.partition(b":")
            if not sep:
                raise ValueError(f"header line without a colon: {line[:80]!r}")
            headers.append((name.strip(), value.strip()))
        if not 100 <= status < 200:  # 1xx: an interim answer, the real one follows
            break
    fields = {name.lower(): value for name, value in headers}
    keep = version == "HTTP/1.1" and fields.get(b"connection", b"").lower() != b"close"
    if method == "HEAD" or status in (204, 304):
        return status, headers, b"", keep
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        return status, headers, await _read_chunked(reader), keep
    if b"content-length" in fields:
        return status, headers, await reader.readexactly(int(fields[b"content-length"])), keep
    return status, headers, await reader.read(), False  # until the server closes


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                pass
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
