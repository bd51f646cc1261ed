"""Wake-ups of parked polls: counted wakes reach only as many polls as the tasks need."""

from __future__ import annotations

import asyncio

from orch8_server.lifecycle.dispatcher import Dispatcher


def _woken(waiters: list) -> list[bool]:
    return [w.event.is_set() for w in waiters]


def test_a_counted_wake_reaches_the_longest_parked_polls_only() -> None:
    async def main() -> None:
        d = Dispatcher()
        singles = [d.park("q", ["h"]) for _ in range(3)]
        d.wake("q", "h", 1)
        assert _woken(singles) == [True, False, False]
        d.wake("q", "h", 1)  # the next one, not the one already woken
        assert _woken(singles) == [True, True, False]
        other = d.park("q", ["other"])
        d.wake("q", "h")  # no count: every interested poll
        assert _woken(singles) == [True, True, True] and not other.event.is_set()

    asyncio.run(main())


def test_a_counted_wake_covers_the_count_with_batch_sizes() -> None:
    async def main() -> None:
        d = Dispatcher()
        polls = [d.park("q", None, want) for want in (10, 10, 10)]
        d.wake("q", "h", 15)  # 10 + 10 cover 15
        assert _woken(polls) == [True, True, False]
        d.unpark(polls[0])
        d.wake("q", "h", 100)
        assert polls[2].event.is_set()

    asyncio.run(main())


def test_a_passed_on_wake_reaches_only_polls_that_could_claim_the_same_tasks() -> None:
    async def main() -> None:
        d = Dispatcher()
        leaving = d.park(["q", "q2"], ["h", "i"], 10)
        others = [d.park("q", ["other"], 10), d.park("q2", ["other"], 10)]
        same = [d.park("q", ["i", "x"], 5), d.park("q", None, 5), d.park("q", ["h"], 5)]
        leaving.event.set()
        d.unpark(leaving)
        d.pass_on(leaving)
        assert _woken(others) == [False, False]  # an empty claim each, for nothing
        assert _woken(same) == [True, True, False]  # 5 + 5 cover the leaving poll's 10
        any_handler = d.park("q2", None, 10)
        d.pass_on(leaving)  # on its second queue, a poll of any handler shares
        assert any_handler.event.is_set() and not others[1].event.is_set()

    asyncio.run(main())
