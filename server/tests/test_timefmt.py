"""RFC 3339 parsing and formatting round-trips for every year the spec allows."""

from __future__ import annotations

import pytest

from orch8_server.timefmt import iso, parse


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000Z"),
        ("2026-11-21T10:30:00.123456+02:00", "2026-11-21T08:30:00.123Z"),
        ("0000-01-01T00:00:00z", "0000-01-01T00:00:00.000Z"),
        ("2024-02-29t23:59:59-00:30", "2024-03-01T00:29:59.000Z"),
        ("9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"),
    ],
)
def test_round_trip(text: str, expected: str) -> None:
    assert iso(parse(text)) == expected


@pytest.mark.parametrize(
    "text",
    ["2023-02-29T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01", "", "2026-01-01T00:00:00+24:00"],
)
def test_rejects_invalid(text: str) -> None:
    assert parse(text) is None
