"""A fault-injecting HTTP/1.1 proxy between a worker adapter and the server.

Each client connection carries one request, forwarded upstream with `Connection: close`;
long-polls are forwarded as they are, and a client that hangs up mid-poll makes the
proxy hang up upstream too, so the server's poll claims nothing (the server relies on
the disconnect). Faults: `503` (answer 503 unavailable without forwarding), `drop`
(read the request, close without answering and without forwarding), `refuse` (stop
listening and cut open connections). Every request is logged for the checks (batch
sizes of polls, P-SDK-3).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

UNAVAILABLE = json.dumps(
    {
        "type": "about:blank",
        "title": "Service Unavailable",
        "status": 503,
        "detail": "conformance proxy fault",
        "code": "unavailable",
        "errors": [],
    }
).encode()
FAULTS = ("none", "503", "drop", "refuse")


class FaultProxy:
    """Runs on its own event-loop thread; `set_fault` is safe from any thread."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0  # the first listen picks a free port; a `refuse` fault reopens the same one
        self.url = ""
        self.mode = "none"
        self.requests: list[dict] = []
        self._conns: set[asyncio.StreamWriter] = set()
        self._server: asyncio.base_events.Server | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._run(self._listen())
        self.port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._run(self._unlisten())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def set_fault(self, mode: str) -> None:
        if mode not in FAULTS:
            raise ValueError(f"unknown fault {mode!r}")
        self._run(self._set(mode))

    def _run(self, coro) -> None:
        asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    async def _set(self, mode: str) -> None:
        if mode == "refuse" and self._server is not None:
            await self._unlisten()
        elif mode != "refuse" and self._server is None:
            await self._listen()
        self.mode = mode

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, reuse_address=True)

    async def _unlisten(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._conns):
            writer.transport.abort()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._conns.add(writer)
        try:
            request = await _read_request(reader)
            if request is None:
                return
            head, body = request
            method, path = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")[:2]
            entry = {"t": time.time() * 1000, "method": method, "path": path, "fault": self.mode}
            if path.startswith("/workers/tasks/poll"):
                try:
                    entry["body"] = json.loads(body) if body else {}
                except ValueError:
                    entry["body"] = None
            self.requests.append(entry)
            if self.mode == "503":
                writer.write(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\n"
                    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: "
                    + str(len(UNAVAILABLE)).encode()
                    + b"\r\n\r\n"
                    + UNAVAILABLE
                )
                await writer.drain()
                return
            if self.mode != "none":
                return  # drop: hang up without answering
            answer = await self._forward(reader, head, body)
            if answer is not None:
                writer.write(answer)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        finally:
            self._conns.discard(writer)
            writer.close()

    async def _forward(self, client: asyncio.StreamReader, head: bytes, body: bytes) -> bytes | None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            return None  # upstream down: the client sees a dropped connection
        lines = [
            line
            for line in head.rstrip(b"\r\n").split(b"\r\n")
            if not line.lower().startswith((b"connection:", b"keep-alive:"))
        ]
        up_writer.write(b"\r\n".join([*lines, b"Connection: close", b"", b""]) + body)
        self._conns.add(up_writer)
        try:
            answer = asyncio.ensure_future(up_reader.read())  # until upstream closes
            hangup = asyncio.ensure_future(client.read(1))  # b"" when the client gives up
            done, _ = await asyncio.wait({answer, hangup}, return_when=asyncio.FIRST_COMPLETED)
            if answer in done:
                hangup.cancel()
                return answer.result() or None
            answer.cancel()
            return None
        finally:
            self._conns.discard(up_writer)
            up_writer.transport.abort()


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        if b":" in line:
            key, value = line.split(b":", 1)
            headers[key.strip().lower()] = value.strip()
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        raw = b""
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            raw += size_line + chunk
            if size == 0:
                return head, raw
    length = int(headers.get(b"content-length", b"0"))
    return head, (await reader.readexactly(length) if length else b"")
