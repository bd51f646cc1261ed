"""Time-ordered, prefixed identifiers (`task_` + ULID)."""

from __future__ import annotations

import base64
import os
import threading
import time

# RFC 4648 base32 (what the C encoder speaks) to Crockford's alphabet (what ULIDs use).
_CROCKFORD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789ABCDEFGHJKMNPQRSTVWXYZ")


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
        # 26 Crockford digits are the top 130 bits of the value shifted into 17 bytes;
        # the C encoder does in one call what a 26-step Python loop did (a hot path).
        return (
            base64.b32encode((value << 6).to_bytes(17, "big")).decode()[:26].translate(_CROCKFORD)
        )


_ulid = _Ulid()


def task_id() -> str:
    return "task_" + _ulid.new()


def lease_id() -> str:
    return "lease_" + _ulid.new()


def request_id() -> str:
    return "req_" + _ulid.new()
