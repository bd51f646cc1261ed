"""Time-ordered, prefixed identifiers (`task_` + ULID)."""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32


class _Ulid:
    """Monotonic ULIDs: within one millisecond the random part counts up, so ids sort
    in creation order (the list cursor relies on it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = 0
        self._last_rand = 0

    def new(self) -> str:
        ms = time.time_ns() // 1_000_000
        with self._lock:
            if ms <= self._last_ms:
                ms = self._last_ms
                self._last_rand = (self._last_rand + 1) & ((1 << 80) - 1)
            else:
                self._last_ms = ms
                self._last_rand = int.from_bytes(os.urandom(10), "big") >> 1
            value = (ms << 80) | self._last_rand
        chars = []
        for _ in range(26):
            chars.append(_ALPHABET[value & 31])
            value >>= 5
        return "".join(reversed(chars))


_ulid = _Ulid()


def task_id() -> str:
    return "task_" + _ulid.new()


def lease_id() -> str:
    return "lease_" + _ulid.new()


def request_id() -> str:
    return "req_" + _ulid.new()
