"""checks.group_attempts and the three checks that read a group's attempts through it
(done_before_last_start, claimed_within_ms, rate_paced's not_held), on a synthetic run."""

from __future__ import annotations

from types import SimpleNamespace

from orch8_conformance.api import ApiError
from orch8_conformance.checks import group_attempts, ms
from orch8_conformance.checks_keys import claimed_within, done_before_last_start
from orch8_conformance.checks_rate import not_held


def stamp(offset_ms: float) -> str:
    """A server timestamp `offset_ms` after 08:00:00 (under a minute)."""
    return f"2027-01-15T08:00:{offset_ms / 1000:06.3f}Z"


def attempt(start: float, end: float | None) -> dict:
    return {"started_at": stamp(start), "ended_at": None if end is None else stamp(end)}


class FakeApi:
    def __init__(self, attempts: dict[str, list[dict]], broken: str | None = None) -> None:
        self._attempts, self._broken = attempts, broken

    def attempts(self, task_id: str) -> list[dict]:
        if task_id == self._broken:
            raise ApiError(500, {"code": "internal"}, f"GET /tasks/{task_id}/attempts")
        return self._attempts[task_id]


def run_of(groups: dict[str, dict[str, list[dict]]], broken: str | None = None) -> SimpleNamespace:
    """Groups of task refs with their attempts; a task's id is `id-<ref>`, `broken`'s read fails."""
    by_id = {f"id-{ref}": attempts for refs in groups.values() for ref, attempts in refs.items()}
    return SimpleNamespace(
        groups={group: list(refs) for group, refs in groups.items()},
        task_id=lambda ref: f"id-{ref}",
        api=FakeApi(by_id, broken and f"id-{broken}"),
        visible_at={ref: 0.0 for refs in groups.values() for ref in refs},
    )


def test_a_group_reads_as_each_tasks_attempts_in_order():
    run = run_of({"g": {"g.1": [attempt(0, 5)], "g.2": []}})
    assert group_attempts(run, "g", "check") == ({"g.1": [attempt(0, 5)], "g.2": []}, [])


def test_an_unknown_group_is_the_checks_failure():
    assert group_attempts(run_of({}), "nope", "claimed_within_ms") == (
        {},
        ["claimed_within_ms: unknown task group 'nope'"],
    )


def test_an_unreadable_history_is_the_checks_failure_and_nothing_else():
    found, errors = group_attempts(run_of({"g": {"g.1": [], "g.2": []}}, broken="g.2"), "g", "rate_paced")
    assert found == {}
    assert errors == [
        "rate_paced: cannot read the attempts of g.2 back: GET /tasks/id-g.2/attempts: HTTP 500 {'code': 'internal'}"
    ]


def test_done_before_last_start():
    groups = {"done": {"d.1": [attempt(0, 100)], "d.2": [attempt(0, 400)]}, "later": {"l.1": [attempt(300, None)]}}
    assert done_before_last_start(run_of(groups), "done", "later") == [
        "d.2 ended 100 ms after the last task of 'later' started: held tasks of a full key held it back (P-KEY-2)"
    ]
    assert done_before_last_start(run_of(groups, broken="l.1"), "done", "later") == [
        "done_before_last_start: cannot read the attempts of l.1 back: "
        "GET /tasks/id-l.1/attempts: HTTP 500 {'code': 'internal'}"
    ]
    assert done_before_last_start(run_of(groups), "done", "nope") == [
        "done_before_last_start: unknown task group 'nope'"
    ]


def test_claimed_within():
    run = run_of({"small": {"s.1": [attempt(2000, 2100)], "s.2": []}})
    run.visible_at = {"s.1": ms(stamp(500)), "s.2": ms(stamp(0))}
    assert claimed_within(run, "small", 1000) == [
        "s.1 was first claimed 1500 ms after its enqueue, expected within 1000 ms: "
        "another tenant's backlog held it back? (P-TEN-5)",
        "s.2 was never claimed, expected within 1000 ms: another tenant's backlog held it back? (P-TEN-5)",
    ]
    assert claimed_within(run_of({}), "small", 1000) == ["claimed_within_ms: unknown task group 'small'"]


def test_not_held():
    run = run_of({"quick": {"q.1": [attempt(0, 50)], "q.2": [attempt(0, 250)]}})
    assert not_held(run, "quick", "k", [ms(stamp(100))], 1) == [
        "q.2 ended 150 ms after start 1 of 'k': tasks held for a token held it back (P-RATE-1)"
    ]
    assert not_held(run_of({"quick": {"q.1": []}}, broken="q.1"), "quick", "k", [0.0], 1) == [
        "rate_paced: cannot read the attempts of q.1 back: GET /tasks/id-q.1/attempts: HTTP 500 {'code': 'internal'}"
    ]
