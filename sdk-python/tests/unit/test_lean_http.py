"""The worker's LeanTransport (orch8/worker/_lean_http.py) against scripted loopback servers:
what httpx's own transport gives a caller, it must give too."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import httpx
import pytest

from orch8.worker import _lean_http
from orch8.worker._lean_http import LeanTransport, usable_for

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """Head and body of one request (bodies have a Content-Length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head, await reader.readexactly(length)


def answer(body: bytes = b'{"ok": true}', extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"{extra}\r\n"
    ).encode() + body


async def with_server(script: Script, client_side: Callable[[str], Awaitable[None]]) -> int:
    """Run `client_side(url)` against a server running `script` per connection; the number of
    connections the server accepted."""
    accepted = 0

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        try:
            await script(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await client_side(f"http://127.0.0.1:{port}")
    finally:
        server.close()
    return accepted


def run(script: Script, client_side: Callable[[str], Awaitable[None]]) -> int:
    return asyncio.run(with_server(script, client_side))


async def until(what: Callable[[], bool], within_s: float = 5.0) -> None:
    """Poll `what` until it holds, failing after `within_s`."""
    deadline = asyncio.get_running_loop().time() + within_s
    while not what():
        assert asyncio.get_running_loop().time() < deadline, "not within the deadline"
        await asyncio.sleep(0.005)


def idle_closed(transport: LeanTransport) -> bool:
    """Every kept-alive connection of `transport` has seen the server's close."""
    idle = [conn for conns in transport._idle.values() for conn in conns]
    return bool(idle) and all(conn.reader.at_eof() for conn in idle)


async def serve_forever(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        _, body = await read_request(reader)
        writer.write(answer(b'{"echo": %s}' % (body or b"null")))
        await writer.drain()


def test_requests_reuse_one_kept_alive_connection_and_carry_body_and_headers():
    seen: list[bytes] = []

    async def script(reader, writer):
        while True:
            head, body = await read_request(reader)
            seen.append(head)
            writer.write(answer(b'{"echo": %s}' % body))
            await writer.drain()

    async def client_side(url):
        async with httpx.AsyncClient(base_url=url, transport=LeanTransport()) as c:
            for i in range(3):
                r = await c.post(
                    "/workers/tasks/poll/batch", json={"n": i}, headers={"X-Tenant-Id": "t1"}
                )
                assert r.status_code == 200 and r.json() == {"echo": {"n": i}}

    assert run(script, client_side) == 1
    assert seen[0].startswith(b"POST /workers/tasks/poll/batch HTTP/1.1\r\n")
    assert (
        b"\r\nx-tenant-id: t1\r\n" in seen[0].lower()
        and b"content-length: 7\r\n" in seen[0].lower()
    )


def test_a_chunked_answer_with_an_interim_100_is_read_whole():
    async def script(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        writer.write(
            b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        writer.write(b'6;ext=1\r\n{"a": \r\n2\r\n1}\r\n0\r\nX-Trailer: y\r\n\r\n')
        await writer.drain()
        await serve_forever(reader, writer)

    async def client_side(url):
        async with httpx.AsyncClient(base_url=url, transport=LeanTransport()) as c:
            r = await c.post("/x", json={})
            assert (r.status_code, r.headers["retry-after"], r.json()) == (503, "2", {"a": 1})
            assert (await c.post("/x", json=1)).json() == {"echo": 1}  # the connection is reusable

    assert run(script, client_side) == 1


def test_connection_close_and_an_answer_without_length_end_the_connection():
    async def script(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()

    async def until_eof(reader, writer):
        await read_request(reader)
        writer.write(b"HTTP/1.0 200 OK\r\n\r\n[1, 2]")
        await writer.drain()

    async def client_side(url):
        async with httpx.AsyncClient(base_url=url, transport=LeanTransport()) as c:
            assert [(await c.get("/")).json() for _ in range(2)] == [{}, {}]

    async def client_eof(url):
        async with httpx.AsyncClient(base_url=url, transport=LeanTransport()) as c:
            assert (await c.get("/")).json() == [1, 2]

    assert run(script, client_side) == 2
    assert run(until_eof, client_eof) == 1


def test_an_answer_sent_before_the_body_was_read_is_returned():
    # The reference server refuses a body by its Content-Length (413) before reading it, and
    # reads the rest: the completer must see the 413 to split the batch (P-SDK-15).
    async def script(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        problem = b'{"code": "payload_too_large"}'
        writer.write(
            b"HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(problem), problem)
        )
        await writer.drain()
        while await reader.read(1 << 20):
            pass

    async def client_side(url):
        async with httpx.AsyncClient(base_url=url, transport=LeanTransport()) as c:
            r = await c.post("/workers/tasks/complete/batch", content=b"x" * 32_000_000)
            assert (r.status_code, r.json()) == (413, {"code": "payload_too_large"})

    assert run(script, client_side) == 1


def test_a_connection_the_server_closed_while_idle_is_replaced_without_an_error():
    async def script(reader, writer):
        _, body = await read_request(reader)
        writer.write(answer(body))  # then closes: its keep-alive timeout

    async def client_side(url):
        transport = LeanTransport()
        async with httpx.AsyncClient(base_url=url, transport=transport) as c:
            assert (await c.post("/", json=1)).json() == 1
            await until(lambda: idle_closed(transport))  # the server's close reached us
            assert (await c.post("/", json=2)).json() == 2

    assert run(script, client_side) == 2


def test_a_close_that_comes_after_the_idle_check_is_retried_once_on_a_new_connection(monkeypatch):
    # The server's close can cross the request on the wire: the answer never starts.
    monkeypatch.setattr(_lean_http._Conn, "stale", lambda self: False)

    async def script(reader, writer):
        _, body = await read_request(reader)
        writer.write(answer(body))

    async def client_side(url):
        transport = LeanTransport()
        async with httpx.AsyncClient(base_url=url, transport=transport) as c:
            assert (await c.post("/", json=1)).json() == 1
            await until(lambda: idle_closed(transport))
            assert (await c.post("/", json=2)).json() == 2

    assert run(script, client_side) == 2


def test_a_reset_before_any_answer_on_a_new_connection_is_an_httpx_transport_error():
    async def script(reader, writer):
        await read_request(reader)  # and hangs up without answering

    async def client_side(url):
        async with httpx.AsyncClient(base_url=url, transport=LeanTransport()) as c:
            with pytest.raises(httpx.RemoteProtocolError, match="disconnected"):
                await c.post("/", json={})

    run(script, client_side)


def test_timeouts_and_refused_connections_are_httpx_errors_with_their_cause():
    async def silent(reader, writer):
        await read_request(reader)
        await reader.read()  # no answer, until the client hangs up

    async def client_side(url):
        async with httpx.AsyncClient(base_url=url, transport=LeanTransport()) as c:
            with pytest.raises(httpx.ReadTimeout):
                await c.post("/", json={}, timeout=0.2)

    run(silent, client_side)

    async def refused():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        async with httpx.AsyncClient(transport=LeanTransport()) as c:
            with pytest.raises(httpx.ConnectError) as err:
                await c.get(f"http://127.0.0.1:{port}/")
        assert str(err.value.__cause__) == "[Errno 111] Connection refused"  # as httpcore words it

    asyncio.run(refused())


def test_a_cancelled_request_drops_its_connection_so_the_server_sees_the_caller_go():
    async def main():
        received, closed = asyncio.Event(), asyncio.Event()

        async def script(reader, writer):
            await read_request(reader)
            received.set()
            await reader.read()  # the long-poll: held until the client hangs up
            closed.set()

        async def client_side(url):
            async with httpx.AsyncClient(base_url=url, transport=LeanTransport()) as c:
                poll = asyncio.ensure_future(c.post("/workers/tasks/poll/batch", json={}))
                await asyncio.wait_for(received.wait(), 5)
                poll.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await poll
                await asyncio.wait_for(closed.wait(), 5)

        await with_server(script, client_side)
        return closed.is_set()

    assert asyncio.run(main())


def test_only_plain_http_without_a_proxy_goes_through_it(monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert usable_for("http://localhost:3001")
    assert not usable_for("https://orch8.example.com")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy:3128")
    assert not usable_for("http://orch8.internal:3001")
    monkeypatch.setenv("NO_PROXY", "orch8.internal")
    assert usable_for("http://orch8.internal:3001")
    monkeypatch.delenv("HTTP_PROXY")
    monkeypatch.setenv("ALL_PROXY", "socks5://proxy:1080")
    assert not usable_for("http://other:3001")


def test_a_dns_failure_keeps_its_own_words(monkeypatch):
    # Only a refusal is reworded (asyncio's "Connect call failed"); a gaierror's errno is
    # negative and os.strerror would turn it into "Unknown error -2".
    import socket

    async def no_such_host(*args, **kwargs):
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(_lean_http.asyncio, "open_connection", no_such_host)

    async def main():
        async with httpx.AsyncClient(transport=LeanTransport()) as c:
            with pytest.raises(httpx.ConnectError) as err:
                await c.get("http://no-such-host.invalid:3001/")
        assert str(err.value) == "[Errno -2] Name or service not known"
        assert isinstance(err.value.__cause__, socket.gaierror)

    asyncio.run(main())


def test_a_cancel_that_meets_the_answer_is_not_lost(monkeypatch):
    # The worker cancels its heartbeat loop at shutdown. With asyncio.wait_for around the
    # exchange, Python before 3.12 returned the answer that came in the same loop turn as
    # the cancel and dropped the cancel: the loop went on heartbeating, the worker never
    # exited (conformance second-signal-sigint, CI 2026-11-28).
    async def main():
        answer: asyncio.Future = asyncio.get_running_loop().create_future()
        waiting = asyncio.Event()

        async def exchange(*args, **kwargs):
            waiting.set()
            return await answer

        monkeypatch.setattr(_lean_http, "_send_and_read", exchange)

        async def script(reader, writer):
            await reader.read()

        async def client_side(url):
            async with httpx.AsyncClient(base_url=url, transport=LeanTransport()) as c:
                call = asyncio.ensure_future(c.post("/workers/w/heartbeat", json={}))
                await asyncio.wait_for(waiting.wait(), 5)  # the request waits for its answer
                answer.set_result((200, [], b"{}", True))
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call

        await with_server(script, client_side)

    asyncio.run(main())


def test_a_worker_sleep_cancelled_as_it_is_woken_stays_cancelled():
    from orch8.worker._loops import _sleep_unless

    async def main():
        wake = asyncio.Event()
        sleeping = asyncio.ensure_future(_sleep_unless(wake, 10_000))
        await asyncio.sleep(0)  # it runs up to its wait
        wake.set()
        sleeping.cancel()
        with pytest.raises(asyncio.CancelledError):
            await sleeping

    asyncio.run(main())
