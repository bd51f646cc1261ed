"""The background-service base (services.py): a failing tick is logged with its
cause and the next runs; poke runs a tick before the interval; stop waits for the tick
and runs the final step once (issue 29, item 6)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from orch8_server.services import Service
from orch8_server.storage.base import StorageUnavailable


def test_a_failing_tick_is_logged_with_its_cause_and_the_service_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> list[str]:
        calls: list[str] = []
        third = asyncio.Event()
        finals: list[int] = []

        async def tick() -> bool:
            calls.append("tick")
            if len(calls) == 1:
                raise StorageUnavailable("database is down")
            if len(calls) == 2:
                raise ValueError("bad row")
            third.set()
            return False

        async def final() -> None:
            finals.append(len(calls))

        service = Service("demo", 3600, tick, final=final)  # only pokes run it again
        service.start()

        async def poke_until_third() -> None:
            while not third.is_set():
                service.poke()
                await asyncio.sleep(0.01)

        await asyncio.wait_for(poke_until_third(), timeout=5)
        await service.stop()
        assert finals == [3] and service.ticks == 3
        return calls

    with caplog.at_level(logging.WARNING, logger="orch8.services"):
        assert asyncio.run(main()) == ["tick", "tick", "tick"]
    records = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("WARNING", "demo skipped: database is down") in records
    assert ("ERROR", "demo failed: bad row") in records


def test_a_tick_that_says_more_is_waiting_runs_again_at_once() -> None:
    async def main() -> int:
        done = asyncio.Event()
        left = [3]

        async def tick() -> bool:
            left[0] -= 1
            if left[0] == 0:
                done.set()
            return left[0] > 0

        service = Service("batches", 3600, tick)
        service.start()
        await asyncio.wait_for(done.wait(), timeout=5)  # not 3 x 3600 s
        await service.stop()
        return service.ticks

    assert asyncio.run(main()) == 3
