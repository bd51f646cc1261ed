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
    in creation order (the list cursor relies on it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = 0
        self._last_rand = 0
        self._time_digits = ""  # the 10 timestamp digits of _last_ms

    def new(self) -> str:
        ms = time.time_ns() // 1_000_000
        with self._lock:
            if ms <= self._last_ms:
                self._last_rand = (self._last_rand + 1) & ((1 << 80) - 1)
            else:
                self._last_ms = ms
                self._last_rand = int.from_bytes(os.urandom(10), "big") >> 1
                self._time_digits = _digits(ms, 5)  # 48-bit time, 10 digits
            rand = self._last_rand
            head = self._time_digits
        return head + _digits(rand, 8)  # 80 random bits, 16 digits


_ulid = _Ulid()


def task_id() -> str:
    return "task_" + _ulid.new()


def lease_id() -> str:
    return "lease_" + _ulid.new()


def request_id() -> str:
    return "req_" + _ulid.new()
