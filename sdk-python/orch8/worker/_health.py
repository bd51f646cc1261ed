"""The worker health endpoint (P-TEL-5): `GET /health` on 127.0.0.1, off by default.

A few lines of HTTP/1.1 over asyncio streams, so the core package needs no web server.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import time
from typing import Any, Protocol

HEALTHY_HEARTBEATS = 3  # P-TEL-5: the last success is at most 3 heartbeat intervals old
_READ_TIMEOUT_S = 5.0


class HealthDeps(Protocol):
    """What the endpoint reads from the running worker."""

    stop_requested: bool
    started_at: float
    last_poll_at: float | None
    last_heartbeat_at: float | None
    heartbeat_interval_ms: int

    @property
    def worker_id(self) -> str: ...

    def free_slots(self) -> int: ...

    def slots(self) -> Any: ...


def _rfc3339(at: float | None) -> str | None:
    if at is None:
        return None
    when = datetime.datetime.fromtimestamp(at, datetime.timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def health(deps: HealthDeps, now: float | None = None) -> tuple[int, dict[str, Any]]:
    """P-TEL-5: the status code and body of `GET /health`.

    Before the first successful poll or heartbeat the worker's start stands in for it, so a
    worker that just started is healthy for 3 heartbeat intervals.
    """
    now = time.time() if now is None else now
    last = max(
        (t for t in (deps.last_poll_at, deps.last_heartbeat_at) if t is not None),
        default=deps.started_at,
    )
    fresh = now - last <= HEALTHY_HEARTBEATS * deps.heartbeat_interval_ms / 1000
    status = "stopping" if deps.stop_requested else "ok" if fresh else "unhealthy"
    body = {
        "status": status,
        "worker_id": deps.worker_id,
        "in_flight": len(deps.slots()),
        "free_slots": max(0, deps.free_slots()),
        "last_poll_at": _rfc3339(deps.last_poll_at),
        "last_heartbeat_at": _rfc3339(deps.last_heartbeat_at),
    }
    return (200 if status == "ok" else 503), body


async def serve_health(deps: HealthDeps, port: int) -> asyncio.Server:
    """Listen on 127.0.0.1:`port` (0 picks a free port) until the server is closed."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_TIMEOUT_S)
            method, path = [*head.split(b"\r\n", 1)[0].split(b" "), b"", b""][:2]
            if path.split(b"?", 1)[0] != b"/health":
                code, body = 404, {"status": "not_found"}
            elif method not in (b"GET", b"HEAD"):
                code, body = 405, {"status": "method_not_allowed"}
            else:
                code, body = health(deps)
            payload = json.dumps(body).encode()
            reason = {200: "OK", 404: "Not Found", 405: "Method Not Allowed"}.get(
                code, "Service Unavailable"
            )
            writer.write(
                f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
                + (payload if method != b"HEAD" else b"")
            )
            await writer.drain()
        except (
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            asyncio.TimeoutError,
            ConnectionError,
        ):
            pass  # a probe that sent no complete request, or went away, gets nothing
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    return await asyncio.start_server(answer, "127.0.0.1", port)
