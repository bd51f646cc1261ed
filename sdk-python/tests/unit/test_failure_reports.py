"""P-SDK-27: failure reports always land (bounded, and re-sent once without checkpoint)."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import httpx
import pytest

from orch8 import PermanentError, RetryableError, TaskContext
from orch8.worker._report import bound_details, bound_message

from .conftest import problem
from .fake_server import FakeServer, Running, task_outcome, wait_until

MIB = 1024 * 1024


# --- bounds ------------------------------------------------------------------------------


@pytest.mark.parametrize("char", ["é", "€", "😀"])  # 2, 3 and 4 bytes of UTF-8
def test_p_sdk_27_message_is_cut_at_16384_bytes_never_inside_a_character(char: str) -> None:
    text = "a" + char * 20_000  # the 16,384th byte falls inside a character for each width
    size = len(text.encode())
    got = bound_message(text)
    kept, suffix = got.rsplit(" [truncated from ", 1)
    assert suffix == f"{size} bytes]"
    assert text.startswith(kept)  # a prefix of whole characters
    assert 16_384 - len(char.encode()) < len(kept.encode()) <= 16_384


def test_p_sdk_27_short_messages_are_unchanged() -> None:
    exactly = "é" * 8192  # 16,384 bytes
    assert bound_message(exactly) == exactly
    assert bound_message("boom") == "boom"


def test_p_sdk_27_details_over_65536_bytes_of_json_become_a_preview() -> None:
    details = {"blob": "€" * 30_000}  # 90,012 bytes of JSON text
    text = json.dumps(details, ensure_ascii=False, separators=(",", ":"))
    got = bound_details(details)
    assert got is not None and set(got) == {"truncated", "bytes", "preview"}
    assert got["truncated"] is True and got["bytes"] == len(text.encode())
    assert text.startswith(got["preview"])  # never cut inside a character
    assert 4096 - 3 < len(got["preview"].encode()) <= 4096
    small = {"blob": "y" * 60_000}
    assert bound_details(small) is small and bound_details(None) is None


# --- the worker ----------------------------------------------------------------------------


def run_one(server: FakeServer, handler: Any) -> Any:
    """Run `handler` for task t1 until it is settled; the worker's stats."""
    server.add("t1")
    worker = server.worker()
    worker.register("process_image", handler)
    run = Running(worker)
    try:
        wait_until(lambda: worker.stats().in_flight == 0 and worker.stats().tasks_claimed == 1)
    finally:
        run.stop()
    return worker.stats()


def huge(ctx: TaskContext) -> None:
    raise PermanentError("x" * (2 * MIB), details={"blob": "y" * (2 * MIB)})


def test_p_sdk_27_a_2_mib_error_is_sent_bounded_and_lands() -> None:
    server = FakeServer()
    stats = run_one(server, huge)
    [fail] = server.failed
    assert fail["error"] == "x" * 16_384 + f" [truncated from {2 * MIB} bytes]"
    assert fail["details"]["truncated"] is True and fail["details"]["bytes"] > 2 * MIB
    assert fail["code"] == "permanent_error" and fail["retryable"] is False
    assert (stats.tasks_failed, stats.tasks_lease_lost) == (1, 0)


def checkpointed(ctx: TaskContext) -> None:
    raise RetryableError("db down", code="db_down", details={"n": 1}, checkpoint={"z": "z" * 100})


def refuse_fails(server: FakeServer, times: int) -> list[dict[str, Any]]:
    """The first `times` fails of t1 get 413 payload_too_large; later ones are taken."""
    seen: list[dict[str, Any]] = []
    lock = threading.Lock()

    @server.route("POST", "/workers/tasks/t1/fail")
    def fail(request: httpx.Request, body: Any) -> httpx.Response:
        with lock:
            seen.append(body)
            n = len(seen)
        if n <= times:
            return httpx.Response(413, json=problem(413, "payload_too_large", "body over 1 MiB"))
        return httpx.Response(200, json=task_outcome("t1", "failed"))

    return seen


def test_p_sdk_27_a_refused_fail_is_resent_once_without_checkpoint() -> None:
    server = FakeServer()
    seen = refuse_fails(server, times=1)
    stats = run_one(server, checkpointed)
    first, second = seen
    assert first["checkpoint"] == {"z": "z" * 100} and first["details"] == {"n": 1}
    assert "checkpoint" not in second
    assert second["details"] == {"report_refused": {"status": 413, "code": "payload_too_large"}}
    for key in ("error", "code", "retryable", "lease_id"):
        assert second[key] == first[key], key  # the real error is what is stored
    assert (stats.tasks_failed, stats.tasks_lease_lost) == (1, 0)


def test_p_sdk_27_a_second_refusal_gives_the_task_up_as_lease_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = FakeServer()
    seen = refuse_fails(server, times=2)
    with caplog.at_level(logging.WARNING, logger="orch8"):
        stats = run_one(server, checkpointed)
    assert len(seen) == 2  # re-sent once, never a third time
    assert (stats.tasks_failed, stats.tasks_lease_lost) == (0, 1)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any(m.count("413 payload_too_large") == 2 for m in errors), errors


def test_p_sdk_27_nul_in_a_message_becomes_u_fffd() -> None:
    """P-ERR-5 refuses NUL in any string: the message is sent with U+FFFD instead, so the
    report lands rather than being refused twice."""
    assert bound_message("a\x00b\x00") == "a\ufffdb\ufffd"
