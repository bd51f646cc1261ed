"""The per-task shortcuts of the worker's hot path keep its rules (issue 30, CPU per task)."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from orch8.worker.observe import Observer

from .test_worker_units import _all_completed, _Server, _slot


def test_a_completion_whose_runner_is_cancelled_still_goes_out() -> None:
    """The runner awaits its verdict without a shield: cancelling it leaves the result sent."""
    server = _Server(_all_completed)

    async def main() -> asyncio.Task[object]:
        completer = server.completer()
        run = asyncio.ensure_future(completer.complete(_slot("t1"), 1))
        await asyncio.sleep(0)  # its completion is queued, the batch not yet sent
        run.cancel()
        await completer.aclose()
        return run

    run = asyncio.run(main())
    assert run.cancelled()
    assert [[i["task_id"] for i in items] for _, items in server.requests] == [["t1"]]


def test_a_completion_cancelled_during_an_outage_is_resent() -> None:
    async def answer(items: list[dict], n: int) -> httpx.Response:
        if n == 1:
            return httpx.Response(503, json={"status": 503, "code": "unavailable"})
        return await _all_completed(items, n)

    server = _Server(answer)

    async def main() -> None:
        completer = server.completer()
        run = asyncio.ensure_future(completer.complete(_slot("t1"), 1))
        await asyncio.sleep(0)
        run.cancel()
        await completer.aclose()

    asyncio.run(main())
    assert [[i["task_id"] for i in items] for _, items in server.requests] == [["t1"], ["t1"]]


def test_a_line_below_the_level_builds_no_fields(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    observer = Observer("w")
    built: list[object] = []
    monkeypatch.setattr(observer, "extra", lambda *a, **k: built.append(a) or {})
    with caplog.at_level(logging.INFO, logger="orch8.worker"):
        observer.started(_slot("t1").ctx)  # a debug line
        assert built == []
        observer.line(logging.INFO, "start", "worker starting")
    assert len(built) == 1 and [r.message for r in caplog.records] == ["orch8: worker starting"]
