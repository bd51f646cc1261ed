"""The token bucket of a rate limit (P-RATE-1..3): refill, room and the next token."""

from __future__ import annotations

from orch8_server.storage.rate_buckets import Admitted, Bucket


def test_a_bucket_refills_at_its_rate_up_to_burst_P_RATE_1() -> None:
    b = Bucket(limit=10, period_ms=1000, burst=5, tokens=0.0, refilled_at=0)
    b.refill(250)
    assert b.tokens == 2.5
    b.refill(10_000)
    assert b.tokens == 5.0  # never above burst
    b.refill(9_000)  # a clock that went back gains nothing
    assert b.tokens == 5.0


def test_tokens_and_unclaimed_admitted_tasks_never_exceed_burst_P_RATE_2() -> None:
    """Workers away for an hour with `burst` admitted tasks waiting: when they claim those,
    the bucket is empty, not full, so no second burst follows at once."""
    b = Bucket(limit=10, period_ms=1000, burst=5, tokens=0.0, refilled_at=0, ready=5)
    assert b.room(3_600_000, ready=0) == 0  # the hour refilled nothing: 5 were unclaimed
    b = Bucket(limit=10, period_ms=1000, burst=5, tokens=0.0, refilled_at=0, ready=3)
    assert b.room(3_600_000, ready=0) == 2
    b = Bucket(limit=10, period_ms=1000, burst=5, tokens=5.0, refilled_at=0)
    assert b.room(0, ready=3) == 2
    assert b.take(2, now=0, more=True) is None  # burst unclaimed: a claim looks again
    assert (b.tokens, b.ready) == (3.0, 5)


def test_take_says_when_the_next_token_comes_P_RATE_3() -> None:
    b = Bucket(limit=2, period_ms=1000, burst=2, tokens=2.0, refilled_at=0)
    assert b.room(0, ready=0) == 2
    assert b.take(1, now=0, more=False) is None  # nothing waits
    b = Bucket(limit=2, period_ms=1000, burst=4, tokens=1.0, refilled_at=100)
    assert b.room(100, ready=0) == 1
    assert b.take(1, now=100, more=True) == 600  # 0 tokens, one per 500 ms
    b = Bucket(limit=3, period_ms=1000, burst=4, tokens=0.9, refilled_at=0)
    assert b.room(0, ready=0) == 0
    assert b.take(0, now=0, more=True) == 34  # the missing 0.1 token, rounded up


def test_admitted_arms_the_earliest_instant() -> None:
    a = Admitted()
    for at in (None, 50, 20, None, 30):
        a.arm(at)
    assert a.timer == 20
