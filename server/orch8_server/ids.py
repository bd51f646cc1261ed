"""Time-ordered, prefixed identifiers (`task_` + ULID)."""

from __future__ import annotations

import os
import threading
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Every 10-bit group as its two Crockford digits: a ULID is 13 table lookups (base64's
# b32encode is a Python loop on 3.11, and it was 5% of the server at batch 100).
_PAIRS = [a + b for a in _CROCKFORD for b in _CROCKFORD]


def _digits(value: int, pairs: int) -> str:
    """`value` as 2 * pairs Crockford digits, most significant first."""
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in range(10 * (pairs - 1), -1, -10)])


class _Ulid:
    """Monotonic ULIDs: within one millisecond the random part counts up, so ids sort
    in creation order (the list cursor relies on it). Counting up changes the last two
    digits only, until a carry: the first 24 are kept as text (`_head`) until then, so
    most ids cost one table lookup (issue 15: ids were ~4% of the server at batch 100)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = 0
        self._last_rand = 0
        self._time_digits = ""  # the 10 timestamp digits of _last_ms
        self._high = -1  # _last_rand >> 10 that _head encodes (-1: none)
        self._head = ""  # the time digits + the 14 random digits above the last two

    def new(self) -> str:
        ms = time.time_ns() // 1_000_000
        with self._lock:
            if ms <= self._last_ms:
                self._last_rand = (self._last_rand + 1) & ((1 << 80) - 1)
            else:
                self._last_ms = ms
                self._last_rand = int.from_bytes(os.urandom(10), "big") >> 1
                self._time_digits = _digits(ms, 5)  # 48-bit time, 10 digits
                self._high = -1
            rand = self._last_rand
            if rand >> 10 != self._high:
                self._high = rand >> 10
                self._head = self._time_digits + _digits(self._high, 7)  # 70 bits, 14 digits
            return self._head + _PAIRS[rand & 1023]  # the low 10 bits, 2 digits


_ulid = _Ulid()


def task_id() -> str:
    return "task_" + _ulid.new()


def lease_id() -> str:
    return "lease_" + _ulid.new()


def request_id() -> str:
    return "req_" + _ulid.new()
