"""A fault-injecting HTTP/1.1 proxy between a worker adapter and the server.

Each client connection carries one request, forwarded upstream with `Connection: close`;
long-polls are forwarded as they are, and a client that hangs up mid-poll makes the
proxy hang up upstream too, so the server's poll claims nothing (the server relies on
the disconnect).

Faults are rules (see `Fault`); several can be active at once, the first that matches a
request wins. Modes: `503`, `429`, `408`, `413` (answer that status with a problem body and
the rule's `Retry-After`, without forwarding), `drop` (read the request, close without
answering and without forwarding), `refuse` (stop listening and cut open connections),
`delay` (hold the request `hold_ms`, then forward it), `hold_answer` (forward the request at
once, hold the server's answer `hold_ms` before passing it on: tasks a poll claimed reach the
worker that much later, P-SDK-33) and `any_handler` (forward polls without `handler_names`,
so the worker is handed tasks it has no handler for).

Every request is logged for the checks: method, path, the fault applied, user agent,
authorization and X-Tenant-Id, the answer's status, and a summary of worker bodies (poll options, the
task ids of a completion batch, a fail's code and details); an injected answer also records
when the worker took it (`taken`, see `_taken_at`).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass

ANSWERS = {
    "503": (503, "Service Unavailable", "unavailable"),
    "429": (429, "Too Many Requests", "rate_limited"),
    "408": (408, "Request Timeout", "request_timeout"),
    "413": (413, "Content Too Large", "payload_too_large"),
    # Not an Orch8 server (P-SDK-28): a plain-text answer, no problem body.
    "501": (501, "Not Implemented", None),
    "404": (404, "Not Found", None),
}
REWRITES = ("delay", "hold_answer", "any_handler")  # forwarded, so not a fault the worker sees
MODES = ("none", "drop", "refuse", *REWRITES, *ANSWERS)


@dataclass
class Fault:
    """One rule: `mode` applies to requests whose path starts with `path` (all when empty)
    and whose body has at least `min_body_bytes`, at most `count` times (unlimited: None)."""

    mode: str
    path: str = ""
    min_body_bytes: int = 0
    count: int | None = None
    retry_after: str | None = None  # the Retry-After header of an injected answer
    hold_ms: int = 0

    def matches(self, path: str, body: bytes) -> bool:
        if self.count is not None and self.count <= 0:
            return False
        return path.startswith(self.path) and len(body) >= self.min_body_bytes


def fault_from_step(step: dict) -> Fault:
    """A scenario's fault (a `fault` step or an item of `faults`) as a rule."""
    retry_after = step.get("retry_after")
    return Fault(
        mode=step["mode"],
        path=step.get("path", ""),
        min_body_bytes=step.get("min_body_bytes", 0),
        count=step.get("count"),
        retry_after=None if retry_after is None else str(retry_after),
        hold_ms=step.get("hold_ms", 0),
    )


class FaultProxy:
    """Runs on its own event-loop thread; `add_fault` / `clear_faults` are safe from any thread."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        # Its first listen binds port 0 and keeps the port it gets for the whole run: a
        # `refuse` fault reopens the same one. (A port picked free beforehand could be taken
        # by another process before the bind: a fresh-clone run failed so.)
        self.port = 0
        self.url = ""
        self.faults: list[Fault] = []
        self.requests: list[dict] = []
        self._conns: set[asyncio.StreamWriter] = set()
        self._server: asyncio.base_events.Server | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def mode(self) -> str:
        return self.faults[0].mode if self.faults else "none"

    def start(self) -> None:
        self._thread.start()
        self._run(self._listen())

    def close(self) -> None:
        self._run(self._unlisten())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def set_fault(self, mode: str) -> None:
        """Replace every rule by one that applies `mode` to all requests (`none`: no fault)."""
        self.clear_faults()
        if mode != "none":
            self.add_fault(Fault(mode))

    def add_fault(self, fault: Fault) -> None:
        if fault.mode not in MODES:
            raise ValueError(f"unknown fault {fault.mode!r}")
        self._run(self._add(fault))

    def remove_fault(self, fault: Fault) -> None:
        self._run(self._remove(fault))

    def clear_faults(self) -> None:
        for fault in list(self.faults):
            self.remove_fault(fault)

    def _run(self, coro) -> None:
        asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    async def _add(self, fault: Fault) -> None:
        self.faults.append(fault)
        await self._sync_listening()

    async def _remove(self, fault: Fault) -> None:
        if fault in self.faults:
            self.faults.remove(fault)
        await self._sync_listening()

    async def _sync_listening(self) -> None:
        refusing = any(f.mode == "refuse" for f in self.faults)
        if refusing and self._server is not None:
            await self._unlisten()
        elif not refusing and self._server is None:
            await self._listen()

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, reuse_address=True)
        if not self.port:
            self.port = self._server.sockets[0].getsockname()[1]
            self.url = f"http://127.0.0.1:{self.port}"

    async def _unlisten(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._conns):
            writer.transport.abort()

    def _pick(self, path: str, body: bytes) -> Fault | None:
        for fault in self.faults:
            if fault.matches(path, body):
                if fault.count is not None:
                    fault.count -= 1
                return fault
        return None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._conns.add(writer)
        try:
            request = await _read_request(reader)
            if request is None:
                return
            head, headers, body = request
            method, path = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")[:2]
            fault = self._pick(path, body)
            mode = fault.mode if fault else "none"
            entry = {
                "t": time.time() * 1000,
                "method": method,
                "path": path,
                "fault": mode if mode not in REWRITES else "none",
                "rewrite": mode if mode in REWRITES else None,
                "user_agent": headers.get(b"user-agent", b"").decode("latin-1"),
                "authorization": headers.get(b"authorization", b"").decode("latin-1"),
                "tenant": _header(headers, b"x-tenant-id"),  # P-SDK-24; None when absent
                "bytes": len(body),
                "status": None,
                "retry_after": fault.retry_after if mode in ANSWERS else None,
            }
            entry.update(summarize(method, path, body))
            self.requests.append(entry)
            if mode in ANSWERS:
                status, title, code = ANSWERS[mode]
                entry["status"] = status
                writer.write(_problem(status, title, code, fault.retry_after))
                await writer.drain()
                entry["taken"] = await _taken_at(reader, writer)
                return
            if mode in ("drop", "refuse"):
                return  # hang up without answering
            if mode == "delay":
                await asyncio.sleep(fault.hold_ms / 1000)
            if mode == "any_handler" and path.startswith("/workers/tasks/poll"):
                body = _without_handler_names(body)
            answer = await self._forward(reader, head, body)
            if answer is not None and mode == "hold_answer":
                await asyncio.sleep(fault.hold_ms / 1000)
            if answer is not None:
                entry["status"] = _status(answer)
                entry["answered"] = time.time() * 1000
                if path.startswith("/workers/tasks/poll"):
                    entry["claimed_ids"] = _claimed_ids(answer)  # P-SDK-26 check
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
            if not line.lower().startswith((b"connection:", b"keep-alive:", b"content-length:", b"transfer-encoding:"))
        ]
        extra = [b"Connection: close", b"Content-Length: " + str(len(body)).encode()]
        up_writer.write(b"\r\n".join([*lines, *extra, b"", b""]) + body)
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


# How long the proxy waits for the worker to hang up after an injected answer.
TAKE_LIMIT_S = 1.0


async def _taken_at(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> float | None:
    """When the worker took an injected answer: its HTTP client hangs up once it has read it
    (the answer says `Connection: close`), in the worker's own process, so a worker stalled
    on a loaded machine takes it late. None when it kept the connection past TAKE_LIMIT_S."""
    if writer.can_write_eof():
        writer.write_eof()  # a client that reads until the end has it now
    try:
        await asyncio.wait_for(reader.read(1), TAKE_LIMIT_S)
    except asyncio.TimeoutError:
        return None
    except (ConnectionError, OSError):
        pass  # a reset is a hang-up too
    return time.time() * 1000


def summarize(method: str, path: str, body: bytes) -> dict:
    """What the checks need from a worker request's body (never whole outputs)."""
    if method != "POST" or not path.startswith("/workers/"):
        return {}
    try:
        data = json.loads(body) if body else {}
    except ValueError:
        return {"body": None}
    if not isinstance(data, dict):
        return {"body": None}
    if path.startswith("/workers/tasks/poll"):
        return {"body": data}
    if path == "/workers/tasks/complete/batch":
        items = data.get("items") or []
        return {"task_ids": [i.get("task_id") for i in items if isinstance(i, dict)]}
    if path.endswith("/fail") or path.endswith("/complete"):
        keep = ("code", "retryable", "details", "checkpoint", "retry_after_ms")
        return {"task_ids": [path.split("/")[3]], "body": {k: data[k] for k in keep if k in data}}
    if path == "/workers/tasks/fail/batch":
        items = data.get("items") or []
        return {"task_ids": [i.get("task_id") for i in items if isinstance(i, dict)]}
    if path == "/workers":
        return {"body": data}
    return {"keys": sorted(data)}  # heartbeats and the rest: which fields were sent


def _problem(status: int, title: str, code: str | None, retry_after: str | None) -> bytes:
    if code is None:  # something that is not an Orch8 server
        body, media = title.encode(), "text/plain"
    else:
        body = json.dumps(
            {"type": "about:blank", "title": title, "status": status, "detail": "conformance proxy fault", "code": code}
        ).encode()
        media = "application/problem+json"
    head = f"HTTP/1.1 {status} {title}\r\nContent-Type: {media}\r\nConnection: close\r\n"
    if retry_after is not None:
        head += f"Retry-After: {retry_after}\r\n"
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def _header(headers: dict, name: bytes) -> str | None:
    value = headers.get(name)
    return None if value is None else value.decode("latin-1")


def _claimed_ids(answer: bytes) -> list[str]:
    """Ids of the tasks a poll answer delivered (a batch's `tasks`, or one task)."""
    try:
        data = json.loads(answer.split(b"\r\n\r\n", 1)[1] or b"null")
    except (IndexError, ValueError):
        return []
    tasks = data.get("tasks") if isinstance(data, dict) and "tasks" in data else [data]
    return [t["id"] for t in tasks or [] if isinstance(t, dict) and isinstance(t.get("id"), str)]


def _status(answer: bytes) -> int | None:
    try:
        return int(answer.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


def _without_handler_names(body: bytes) -> bytes:
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if isinstance(data, dict):
        data.pop("handler_names", None)
    return json.dumps(data).encode()


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, dict, bytes] | None:
    """(head, lower-cased headers, body); a chunked body is decoded (it is re-sent with a length)."""
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
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            body += chunk[:-2]
            if size == 0:
                return head, headers, body
    length = int(headers.get(b"content-length", b"0"))
    return head, headers, (await reader.readexactly(length) if length else b"")
