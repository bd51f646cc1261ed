"""Epoch-millisecond timestamps and their RFC 3339 wire form.

The server keeps every instant as integer milliseconds since the Unix epoch (cheap to
compare and index); this module converts at the edge. Civil-date arithmetic is done by
hand so every RFC 3339 year (0000-9999) round-trips, which `datetime` cannot do.
"""

from __future__ import annotations

import re
import time
from functools import lru_cache

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)


# P-CLOCK-1: on a server started with --test-clock, the time every rule reads stands still
# at `_test_now` and moves only through advance_test_clock (POST /clock/advance).
_test_now: int | None = None


def now_ms() -> int:
    if _test_now is not None:
        return _test_now
    return time.time_ns() // 1_000_000


def monotonic_s() -> float:
    """Seconds for measuring intervals (token buckets): the test clock when it is on."""
    if _test_now is not None:
        return _test_now / 1000
    return time.monotonic()


def use_test_clock(on: bool) -> None:
    """Start the test clock at the system time (on), or go back to the system clock."""
    global _test_now
    _test_now = time.time_ns() // 1_000_000 if on else None


def test_clock_on() -> bool:
    return _test_now is not None


def advance_test_clock(ms: int) -> int:
    """Move the test clock forward by `ms`; returns the new time."""
    global _test_now
    if _test_now is None:
        raise RuntimeError("the test clock is off")
    _test_now += ms
    return _test_now


def _days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def _days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28
    return 30 if m in (4, 6, 9, 11) else 31


def parse(value: str) -> int | None:
    """RFC 3339 date-time to epoch ms; None when it is not a valid instant."""
    match = _RFC3339.match(value)
    if not match:
        return None
    y, mo, d, h, mi, s = (int(match.group(i)) for i in range(1, 7))
    if not (1 <= mo <= 12 and 1 <= d <= _days_in_month(y, mo) and h < 24 and mi < 60 and s <= 60):
        return None
    frac = match.group(7)
    millis = int((frac[1:] + "00")[:3]) if frac else 0
    tz = match.group(8)
    offset = 0
    if tz not in ("Z", "z"):
        oh, om = int(tz[1:3]), int(tz[4:6])
        if oh > 23 or om > 59:
            return None
        offset = (oh * 60 + om) * (1 if tz[0] == "+" else -1)
    seconds = _days_from_civil(y, mo, d) * 86400 + h * 3600 + (mi - offset) * 60 + s
    return seconds * 1000 + millis


@lru_cache(maxsize=4096)  # one batch renders the same few instants hundreds of times
def iso(ms: int) -> str:
    """Epoch ms to `YYYY-MM-DDTHH:MM:SS.mmmZ`."""
    days, rem = divmod(ms, 86_400_000)
    y, m, d = _civil_from_days(days)
    secs, millis = divmod(rem, 1000)
    h, secs = divmod(secs, 3600)
    mi, s = divmod(secs, 60)
    return f"{y:04d}-{m:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{millis:03d}Z"


def iso_or_none(ms: int | None) -> str | None:
    return None if ms is None else iso(ms)
