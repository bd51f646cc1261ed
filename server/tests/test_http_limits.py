"""Request limits on the HTTP layer against a real server, over raw sockets (P-HTTP-1/2).

The server runs with 300 ms header and body timeouts so the slow-client cases finish fast;
every read is bounded by a deadline, and no test sleeps past the timeout under test.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest
from conftest import eventually

from orch8_server.cli import parse_settings
from orch8_server.testing import RunningServer

pytestmark = pytest.mark.backends("sqlite")  # the HTTP layer does not depend on the backend

TIMEOUT_MS = 300
DEADLINE_S = 10.0  # any single exchange; far above every timeout under test


@pytest.fixture(scope="module")
def server(start_server: Callable[..., RunningServer]) -> RunningServer:
    return start_server(**{"header-timeout-ms": TIMEOUT_MS, "body-timeout-ms": TIMEOUT_MS})


class Reply:
    """What one connection received: the first response, and whether the server closed."""

    def __init__(self, raw: bytes, closed: bool, elapsed: float) -> None:
        self.raw, self.closed, self.elapsed = raw, closed, elapsed
        head, _, self.body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split(" ")[1]) if lines[0].startswith("HTTP/") else 0
        self.headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:])
        }

    def problem(self) -> dict[str, Any]:
        assert self.headers["content-type"] == "application/problem+json", self.raw[:500]
        assert int(self.headers["content-length"]) == len(self.body), self.raw[:500]
        body: dict[str, Any] = orjson.loads(self.body)
        return body


def connect(server: RunningServer) -> socket.socket:
    return socket.create_connection((server.host, server.port), timeout=DEADLINE_S)


def read_reply(sock: socket.socket, started: float, *, until_close: bool = True) -> Reply:
    """Read until the server closes (or, with until_close=False, until one whole response
    has arrived), never past DEADLINE_S after `started`."""
    data, closed = b"", False
    deadline = started + DEADLINE_S
    while True:
        _, sep, body = data.partition(b"\r\n\r\n")
        if not until_close and sep:
            length = Reply(data, False, 0).headers.get("content-length")
            if length is not None and len(body) >= int(length):
                break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        data += chunk
    return Reply(data, closed, time.monotonic() - started)


def exchange(server: RunningServer, *parts: bytes) -> Reply:
    """Send `parts` on a new connection (from a thread: the server may stop reading before
    all of it is sent) and read what comes back until the server closes."""
    with connect(server) as sock:
        started = time.monotonic()

        def send() -> None:
            try:
                for part in parts:
                    sock.sendall(part)
            except OSError:  # the server answered and closed first: expected for the big ones
                pass

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        reply = read_reply(sock, started)
        sender.join(DEADLINE_S)
        return reply


def request(target: str = "/health/live", headers: bytes = b"", method: bytes = b"GET") -> bytes:
    return method + b" " + target.encode() + b" HTTP/1.1\r\nHost: test\r\n" + headers


def assert_refused(reply: Reply, status: int, code: str, instance: str | None) -> dict[str, Any]:
    """An RFC 9457 problem with `code`, then the connection closed (P-HTTP-1/2)."""
    assert reply.status == status, reply.raw[:500]
    body = reply.problem()
    assert body["code"] == code and body["status"] == status, body
    assert body["type"] == f"urn:orch8:problem:{code}" and body["title"] and body["detail"]
    assert body["errors"] == []
    assert body.get("instance") == instance, body
    assert reply.headers["connection"] == "close"
    assert reply.closed, "the server kept the connection open"
    return body


def still_serves(server: RunningServer) -> None:
    assert httpx.get(server.url + "/health/live", timeout=DEADLINE_S).status_code == 200


# -- P-HTTP-1: sizes -------------------------------------------------------------------


def test_twenty_thousand_header_fields_are_431(server: RunningServer) -> None:
    fields = b"".join(b"X-Field-%d: v\r\n" % i for i in range(20_000))
    reply = exchange(server, request(headers=fields + b"\r\n"))
    body = assert_refused(reply, 431, "headers_too_large", "/health/live")
    assert "100 header fields" in body["detail"]
    still_serves(server)


def test_one_8_mb_header_is_431(server: RunningServer) -> None:
    """The field is refused while it is still arriving, and the client, still sending,
    reads the answer (the server drains before closing, instead of resetting)."""
    huge = b"Authorization: Bearer " + b"A" * 8_000_000 + b"\r\n\r\n"
    reply = exchange(server, request(), huge)
    body = assert_refused(reply, 431, "headers_too_large", "/health/live")
    assert "65536 bytes" in body["detail"]
    still_serves(server)


def test_a_huge_field_is_refused_while_it_arrives(server: RunningServer) -> None:
    """A field never finished is refused once the head is past what the limits allow
    (431), not held in memory until the header timeout (which would be a 408)."""
    unfinished = b"Authorization: Bearer " + b"A" * 1_000_000  # no CRLF, and then silence
    reply = exchange(server, request(), unfinished)
    assert_refused(reply, 431, "headers_too_large", "/health/live")


def test_fields_over_64_kib_in_all_are_431(server: RunningServer) -> None:
    fields = b"".join(b"X-Part-%d: %s\r\n" % (i, b"b" * 1000) for i in range(70))
    reply = exchange(server, request(headers=fields + b"\r\n"))
    assert_refused(reply, 431, "headers_too_large", "/health/live")


def test_a_9_kib_request_line_is_431_without_an_instance(server: RunningServer) -> None:
    reply = exchange(server, request("/" + "a" * 9 * 1024, b"\r\n"))
    body = assert_refused(reply, 431, "headers_too_large", None)
    assert "request line" in body["detail"]


def test_requests_at_the_limits_pass(server: RunningServer) -> None:
    """100 fields and a request line of exactly 8192 bytes reach the routes."""
    fields = b"".join(b"X-F%d: v\r\n" % i for i in range(98))  # + Host + Connection = 100
    reply = exchange(server, request(headers=fields + b"Connection: close\r\n\r\n"))
    assert reply.status == 200, reply.raw[:300]
    target = "/health/live?pad="
    target += "p" * (8192 - len("GET  HTTP/1.1") - len(target))
    line = request(target, b"Connection: close\r\n\r\n")
    assert line.index(b"\r\n") == 8192
    assert exchange(server, line).status == 200


# -- P-HTTP-2: time --------------------------------------------------------------------


def test_half_the_headers_then_silence_is_408(server: RunningServer) -> None:
    reply = exchange(server, request(headers=b"X-Started: yes\r\nX-Next"))
    body = assert_refused(reply, 408, "request_timeout", "/health/live")
    assert f"{TIMEOUT_MS} ms" in body["detail"]
    assert TIMEOUT_MS / 1000 * 0.9 <= reply.elapsed < 8, reply.elapsed


def test_a_body_that_stalls_is_408_and_the_request_does_nothing(
    server: RunningServer, name: str
) -> None:
    """The JSON held so far is complete: only the declared trailing bytes are missing. The
    request must not be acted on."""
    body = orjson.dumps({"handler_name": name})
    head = request(
        "/tasks",
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (len(body) + 10),
        b"POST",
    )
    reply = exchange(server, head + body)
    assert_refused(reply, 408, "request_timeout", "/tasks")
    assert TIMEOUT_MS / 1000 * 0.9 <= reply.elapsed < 8, reply.elapsed
    listed = httpx.get(server.url + "/tasks", params={"handler_name": name}, timeout=DEADLINE_S)
    assert listed.status_code == 200 and listed.json()["tasks"] == [], listed.text


def test_a_trickled_body_is_408_at_the_deadline(server: RunningServer) -> None:
    """The body timeout is a deadline from the end of the headers, not an idle timer: a
    byte every 50 ms does not keep the request alive."""
    head = request(
        "/tasks", b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n", b"POST"
    )
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(head)
        stop = threading.Event()

        def trickle() -> None:
            try:
                while not stop.wait(0.05):
                    sock.sendall(b" ")
            except OSError:
                pass

        sender = threading.Thread(target=trickle, daemon=True)
        sender.start()
        reply = read_reply(sock, started)
        stop.set()
        sender.join(DEADLINE_S)
    assert_refused(reply, 408, "request_timeout", "/tasks")
    assert reply.elapsed < 8, reply.elapsed


def test_a_connection_that_sends_nothing_is_closed_without_an_answer(
    server: RunningServer,
) -> None:
    with connect(server) as sock:
        reply = read_reply(sock, time.monotonic())
    assert reply.closed and reply.raw == b""
    assert TIMEOUT_MS / 1000 * 0.9 <= reply.elapsed < 8, reply.elapsed


def test_ordinary_requests_on_one_connection_still_work(
    start_server: Callable[..., RunningServer], name: str
) -> None:
    """Keep-alive requests, a head split over two reads and a body sent apart from its
    headers, each part well inside the timeouts, are served as before."""
    patient = start_server(**{"header-timeout-ms": 5000, "body-timeout-ms": 5000})
    body = orjson.dumps({"handler_name": name})
    post = request(
        "/tasks",
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body),
        b"POST",
    )
    get = request(headers=b"\r\n")
    with connect(patient) as sock:
        for parts in ([get], [get[:20], get[20:]], [post[:30], post[30:], body], [get]):
            started = time.monotonic()
            for part in parts:
                sock.sendall(part)
                time.sleep(0.1)  # a slow client, far inside the 5 s timeouts
            reply = read_reply(sock, started, until_close=False)
            assert reply.status in (200, 201) and not reply.closed, reply.raw[:300]
    listed = httpx.get(patient.url + "/tasks", params={"handler_name": name}, timeout=DEADLINE_S)
    assert len(listed.json()["tasks"]) == 1


def test_an_idle_keep_alive_connection_outlives_the_timeouts(server: RunningServer) -> None:
    """After an answer, the header timeout does not close the connection: the next
    request may come later (keep-alive has its own, longer timeout)."""
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(request(headers=b"\r\n"))
        assert read_reply(sock, started, until_close=False).status == 200
        sock.settimeout(3 * TIMEOUT_MS / 1000)  # three header timeouts of silence
        with pytest.raises(TimeoutError):
            sock.recv(1)  # neither data nor EOF: the connection stays open
        started = time.monotonic()
        sock.sendall(request(headers=b"\r\n"))
        reply = read_reply(sock, started, until_close=False)
        assert reply.status == 200 and not reply.closed


def test_refusals_are_counted_once_and_log_no_error(
    start_server: Callable[..., RunningServer],
) -> None:
    """Each refusal is one orch8_problems_total count of its code and one info line; a
    body refused while the app waits for it is no `internal` error."""
    fresh = start_server(**{"header-timeout-ms": TIMEOUT_MS, "body-timeout-ms": TIMEOUT_MS})
    exchange(fresh, request("/" + "a" * 9000, b"\r\n"))
    stalled = b"Content-Type: application/json\r\nContent-Length: 10\r\n\r\n{"
    assert exchange(fresh, request("/tasks", stalled, b"POST")).status == 408

    def counts() -> dict[str, float]:
        text = httpx.get(fresh.url + "/metrics", timeout=DEADLINE_S).text
        found = re.findall(r'^orch8_problems_total\{code="([^"]+)"\} (\S+)$', text, re.M)
        return {code: float(n) for code, n in found}

    expected = {"headers_too_large": 1.0, "request_timeout": 1.0}
    eventually(lambda: counts() == expected or None)
    log = fresh.log.read_text()
    assert log.count('"request refused"') == 2
    assert '"level":"error"' not in log, log


# -- flags -----------------------------------------------------------------------------


def test_flags_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    s = parse_settings([])
    assert (s.max_header_count, s.max_header_bytes) == (100, 65536)
    assert (s.header_timeout_ms, s.body_timeout_ms) == (10_000, 30_000)
    monkeypatch.setenv("ORCH8_MAX_HEADER_COUNT", "20")
    monkeypatch.setenv("ORCH8_BODY_TIMEOUT_MS", "500")
    s = parse_settings(["--max-header-bytes", "4096", "--header-timeout-ms", "250"])
    assert (s.max_header_count, s.max_header_bytes) == (20, 4096)
    assert (s.header_timeout_ms, s.body_timeout_ms) == (250, 500)
    with pytest.raises(SystemExit):
        parse_settings(["--max-header-count", "0"])


def test_smaller_limits_from_flags(start_server: Callable[..., RunningServer]) -> None:
    small = start_server(**{"max-header-count": 5, "max-header-bytes": 2048})
    fields = b"".join(b"X-%d: v\r\n" % i for i in range(5))  # 6 with Host
    assert_refused(
        exchange(small, request(headers=fields + b"\r\n")), 431, "headers_too_large", "/health/live"
    )
    big = b"X-Big: " + b"b" * 2100 + b"\r\n\r\n"
    assert_refused(exchange(small, request(headers=big)), 431, "headers_too_large", "/health/live")
    ok = exchange(small, request(headers=b"Connection: close\r\n\r\n"))
    assert ok.status == 200
