"""Task and lease ids: ULIDs in Crockford base32, time-ordered, never repeated."""

from __future__ import annotations

import base64
import random

from orch8_server import ids

_RFC4648_TO_CROCKFORD = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
)


def _reference(ms: int, rand: int) -> str:
    """The ULID text of (48-bit time, 80-bit randomness) by the standard library."""
    value = (ms << 80) | rand
    text = base64.b32encode((value << 6).to_bytes(17, "big")).decode()[:26]
    return text.translate(_RFC4648_TO_CROCKFORD)


def test_digits_match_the_reference_encoding() -> None:
    rng = random.Random(7)
    for ms, rand in [(0, 0), (2**48 - 1, 2**80 - 1), (1, 1023)] + [
        (rng.getrandbits(48), rng.getrandbits(80)) for _ in range(2000)
    ]:
        assert ids._digits(ms, 5) + ids._digits(rand, 8) == _reference(ms, rand)


def test_ids_are_prefixed_sorted_and_unique() -> None:
    made = [ids.task_id() for _ in range(20_000)]
    assert all(t.startswith("task_") and len(t) == 31 for t in made)
    assert made == sorted(made) and len(set(made)) == len(made)
    assert ids.lease_id().startswith("lease_")


def test_ids_counting_up_across_a_carry_match_the_reference() -> None:
    """Within one millisecond the cached head is reused until the low 10 bits carry."""
    ulid = ids._Ulid()
    ms = 2**47  # far in the future: every id below counts up within this millisecond
    ulid._last_ms, ulid._last_rand, ulid._time_digits = ms, 2**20 - 5, ids._digits(ms, 5)
    made = [ulid.new() for _ in range(2100)]
    assert made == [_reference(ms, 2**20 - 4 + i) for i in range(2100)]
