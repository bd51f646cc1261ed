"""split_candidates, the per-candidate step both backends' claims share (P-EXPIRE-1,
P-CTRL-2), without a database."""

from __future__ import annotations

from typing import Any

from orch8_server.storage.claim_budget import split_candidates

NOW = 1_000


def _row(seq: int, handler: str, good_until: int | None = None) -> dict[str, Any]:
    return {"seq": seq, "handler_name": handler, "good_until": good_until}


def test_p_expire_1_stale_rows_are_split_out_and_spend_no_budget() -> None:
    rows = [_row(1, "a", NOW), _row(2, "a", NOW + 1), _row(3, "b", NOW - 5), _row(4, "b")]
    room = {"a": 1}
    excluded: set[str] = set()
    take, stale, capped_out = split_candidates(rows, NOW, room, excluded)
    assert [r["seq"] for r in take] == [2, 4]
    assert [r["seq"] for r in stale] == [1, 3]  # good_until == now is already past
    assert room == {"a": 0}  # only the live row of "a" spent its budget
    assert (excluded, capped_out) == (set(), False)


def test_p_ctrl_2_a_handler_at_zero_is_excluded_and_caps_out() -> None:
    rows = [_row(1, "a"), _row(2, "a"), _row(3, "b"), _row(4, "a"), _row(5, "c")]
    room = {"a": 1, "c": 0}
    excluded: set[str] = set()
    take, stale, capped_out = split_candidates(rows, NOW, room, excluded)
    assert [r["seq"] for r in take] == [1, 3]  # "a" once, unbudgeted "b"; never "c"
    assert stale == []
    assert room == {"a": 0, "c": 0}
    assert excluded == {"a", "c"}
    assert capped_out is True


def test_p_ctrl_2_unbudgeted_handlers_are_always_taken() -> None:
    rows = [_row(1, "x"), _row(2, "y"), _row(3, "x")]
    room = {"a": 0}  # a capped handler with no candidates in this batch
    excluded = {"a"}
    take, stale, capped_out = split_candidates(rows, NOW, room, excluded)
    assert take == rows  # claim order kept, the same row objects
    assert (stale, capped_out) == ([], False)
    assert (room, excluded) == ({"a": 0}, {"a"})
