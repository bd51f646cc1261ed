"""P-SDK-16's wait check (checks_sdk.retry_after_waits) on synthetic proxy records, and the
proxy's record of when a worker took an injected answer (`taken`)."""

from __future__ import annotations

import socket
import time
from types import SimpleNamespace

import pytest

from orch8_conformance import proxy as proxy_module
from orch8_conformance.checks_sdk import retry_after_waits
from orch8_conformance.proxy import Fault, FaultProxy

POLL = "/workers/tasks/poll/batch"
SPEC = {"worker": "w1", "path": "/workers/tasks/poll", "slack_ms": 600}  # outage-retry-after's


def run_of(*records: dict) -> SimpleNamespace:
    """What the check reads of a run: one worker and the proxy's records."""
    w1 = SimpleNamespace(worker_id="w1")
    return SimpleNamespace(workers={"w1": w1}, worker=lambda name: w1, proxy=SimpleNamespace(requests=list(records)))


def refused(t: float, taken: float | None) -> dict:
    """A poll the proxy answered 429 with Retry-After: 2 at `t`, taken by the worker at `taken`."""
    return {"t": t, "path": POLL, "fault": "429", "retry_after": "2", "taken": taken, "body": {"worker_id": "w1"}}


def poll(t: float) -> dict:
    return {"t": t, "path": POLL, "fault": "none", "retry_after": None, "body": {"worker_id": "w1"}}


def test_a_worker_that_took_the_answer_late_is_judged_from_then():
    # Stalled 800 ms before reading the 429, then waited 2,100 ms: 2,900 ms after the send.
    assert retry_after_waits(run_of(refused(0, 800), poll(2900)), SPEC) == []


def test_a_wait_within_bounds_passes():
    assert retry_after_waits(run_of(refused(0, 2), poll(2150)), SPEC) == []


@pytest.mark.parametrize("taken", [2, 800])
def test_an_early_retry_fails(taken):
    reasons = retry_after_waits(run_of(refused(0, taken), poll(1500)), SPEC)
    assert reasons == [
        "w1: next request to /workers/tasks/poll came 1500 ms after a 429 with Retry-After: 2 was sent, "
        "expected at least 1950 ms (P-SDK-16)"
    ]


def test_a_long_wait_after_taking_the_answer_fails():
    reasons = retry_after_waits(run_of(refused(0, 300), poll(3200)), SPEC)
    assert reasons == [
        "w1: next request to /workers/tasks/poll came 2900 ms after it took a 429 with Retry-After: 2 "
        "(300 ms after it was sent), expected at most 2800 ms (P-SDK-16)"
    ]


def test_without_a_hang_up_the_wait_runs_from_the_send():
    reasons = retry_after_waits(run_of(refused(0, None), poll(2900)), SPEC)
    assert len(reasons) == 1
    assert "came 2900 ms after it took a 429" in reasons[0]


def test_no_next_request_fails():
    assert retry_after_waits(run_of(refused(0, 1)), SPEC) == [
        "w1: no request to /workers/tasks/poll after the 429 with Retry-After: 2"
    ]


@pytest.fixture
def faulty_proxy():
    p = FaultProxy("127.0.0.1", 9)  # never forwarded to: every request gets the injected answer
    p.start()
    p.add_fault(Fault("429", retry_after="2"))
    yield p
    p.close()


def ask(port: int, read_after_s: float, hang_up: bool = True) -> socket.socket:
    """A worker that sends a poll, is stalled `read_after_s`, then reads the answer."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST /workers/tasks/poll HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
    time.sleep(read_after_s)
    answer = b""
    while chunk := sock.recv(4096):  # the proxy ends its side after the answer
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 429")
    if hang_up:
        sock.close()
    return sock


def record_when_settled(p: FaultProxy, deadline_s: float = 5) -> dict:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if p.requests and "taken" in p.requests[0]:
            return p.requests[0]
        time.sleep(0.01)
    raise AssertionError(f"the proxy recorded no taken within {deadline_s} s: {p.requests}")


def test_the_proxy_records_when_a_stalled_worker_took_its_answer(faulty_proxy):
    ask(faulty_proxy.port, read_after_s=0.3)
    record = record_when_settled(faulty_proxy)
    assert record["status"] == 429
    assert 290 <= record["taken"] - record["t"] < 1000


def test_a_worker_that_keeps_the_connection_took_it_at_no_known_time(faulty_proxy, monkeypatch):
    monkeypatch.setattr(proxy_module, "TAKE_LIMIT_S", 0.2)
    sock = ask(faulty_proxy.port, read_after_s=0, hang_up=False)
    try:
        assert record_when_settled(faulty_proxy)["taken"] is None
    finally:
        sock.close()
