"""Rate limits (docs/protocol.md 4d, P-RATE-1..4): defined before the tasks, changed or
removed by a timeline step as an operator would, checked from the attempt history.

An admitted task keeps its token until claimed (P-RATE-2), so the bound holds for starts
themselves, however late workers claim: over any window of t ms at most
burst + limit * t / period_ms tasks of a key start.

Each function returns human-readable reasons; an empty list means the check passed.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from . import checks_keys
from .api import ApiError

if TYPE_CHECKING:
    from .run import ScenarioRun

# Server stamps have millisecond resolution and a token's instant is rounded up to one.
STAMP_MS = 5


def define(run: ScenarioRun, limits: dict[str, dict]) -> list[str]:
    """P-RATE-1: the scenario's `rate_limits`, PUT before any task is enqueued; the answer
    must echo the settings (`burst` defaults to `limit`)."""
    out = []
    for key, body in limits.items():
        try:
            got = run.api.call("PUT", f"/rate-limits/{key}", body)
        except ApiError as err:
            out.append(f"rate limit {key}: {err}")
            continue
        want = {"limit": body["limit"], "period_ms": body["period_ms"], "burst": body.get("burst", body["limit"])}
        if {k: got.get(k) for k in want} != want:
            out.append(f"PUT /rate-limits/{key} answered {got}, expected the settings {want} (P-RATE-1)")
    return out


def end_state(run: ScenarioRun, expect: dict) -> list[str]:
    out = []
    for key, wanted in expect.get("rate_paced", {}).items():
        limit = run.scenario.get("rate_limits", {}).get(key)
        if limit is None:
            out.append(f"rate_paced: {key!r} is not among the scenario's rate_limits")
            continue
        try:
            starts, out_key = key_starts(run, key)
        except ApiError as err:
            out.append(f"rate_paced: cannot read the tasks back: {err}")
            continue
        out += out_key + paced(key, limit, starts)
        if "not_held" in wanted:
            out += not_held(run, wanted["not_held"], key, starts, wanted["before_start"])
    for key, wanted in expect.get("rate_changed", {}).items():
        out += changed(run, key, wanted)
    return out


def change(run: ScenarioRun, step: dict, what: str) -> list[str]:
    """P-RATE-4, an operator's call: `set_rate_limit` PUTs `rate_limit` on an existing key
    (the answer echoes it, its tokens kept but capped at the new burst); `delete_rate_limit`
    DELETEs the key, after which GET /rate-limits no longer lists it. The instants the call
    was sent and answered are kept for `rate_changed`."""
    key, body = step["key"], step.get("rate_limit")
    sent = time.time() * 1000
    try:
        if body is not None:
            out = define(run, {key: body})
            listed, burst = _listed(run, key), body.get("burst", body["limit"])
            if listed is not None and listed.get("tokens", 0) > burst:
                out.append(f"{key!r} has {listed['tokens']} tokens after the PUT, above its burst {burst} (P-RATE-4)")
        else:
            run.api.call("DELETE", f"/rate-limits/{key}")
            out = [] if _listed(run, key) is None else [f"GET /rate-limits still lists {key!r} after its DELETE"]
    except ApiError as err:
        out = [str(err)]
    run.rate_changes[key] = (sent, time.time() * 1000)
    return [f"at {what}: {reason}" for reason in out]


def _listed(run: ScenarioRun, key: str) -> dict | None:
    rows = run.api.call("GET", "/rate-limits")["rate_limits"]
    return next((row for row in rows if row.get("key") == key), None)


def changed(run: ScenarioRun, key: str, wanted: dict) -> list[str]:
    """P-RATE-4: a key changed by the timeline. Exactly `before` of its tasks' starts came
    before the change was sent, at the scenario's pace; the other `after` came once it was
    sent and within `within_ms` of its answer (the held tasks were let go at once, not at
    the old pace); after a PUT that raises the pace they keep to the new one too."""
    old = run.scenario.get("rate_limits", {}).get(key)
    if key not in run.rate_changes or old is None:
        return [f"rate_changed: {key!r} is not among the scenario's rate_limits, or no timeline step changed it"]
    try:
        starts, out = key_starts(run, key)
    except ApiError as err:
        return [f"rate_changed: cannot read the tasks back: {err}"]
    sent, answered = run.rate_changes[key]
    early = [s for s in starts if s < sent - STAMP_MS]
    late = starts[len(early) :]
    if len(early) != wanted["before"]:
        out.append(f"{len(early)} tasks of {key!r} started before it was changed, expected {wanted['before']}")
    if len(late) != wanted["after"]:
        out.append(f"{len(late)} tasks of {key!r} started after it was changed, expected {wanted['after']}")
    slow = [s - answered for s in late if s > answered + wanted["within_ms"]]
    if slow:
        out.append(
            f"{len(slow)} tasks of {key!r} started up to {max(slow):.0f} ms after its change was answered, "
            f"expected within {wanted['within_ms']} ms: its held tasks waited for the old pace (P-RATE-4)"
        )
    out += paced(key, old, early) if early else []
    steps = [s for s in run.scenario.get("timeline", []) if s.get("key") == key]
    new = steps[-1].get("rate_limit")  # the last change is the one timed
    return out + (paced(key, new, late) if new and late else [])


def key_starts(run: ScenarioRun, key: str) -> tuple[list[float], list[str]]:
    """The sorted starts of every attempt of the tasks naming `key` (workflow steps' tasks
    included, P-RATE-5), and the tasks that do not read back the rate_limit_key they were
    enqueued with."""
    from .checks import ms  # checks imports this module

    out, starts = [], []
    for ref, task_id in run.ids.items():
        task = run.api.task(task_id)
        want = run.sent.get(ref, {}).get("rate_limit_key")
        if task.get("rate_limit_key") != want:
            out.append(f"{ref} reads back rate_limit_key {task.get('rate_limit_key')!r}, enqueued with {want!r}")
        if want == key:
            starts += [ms(a["started_at"]) for a in run.api.attempts(task_id)]
    for task in checks_keys.step_tasks(run):
        if task.get("rate_limit_key") == key:
            starts += [ms(a["started_at"]) for a in run.api.attempts(task["id"])]
    return sorted(starts), out


def paced(key: str, limit: dict, starts: list[float]) -> list[str]:
    """P-RATE-1, P-RATE-2: the starts of the tasks naming `key` keep to its limit over every
    window (every pair of starts). The window of all of them is the pace applied: the last
    start came no sooner than the tokens beyond the first `burst` take to come."""
    rate, period, burst = limit["limit"], limit["period_ms"], limit.get("burst", limit["limit"])
    out: list[str] = []
    if not starts:
        return [f"rate_paced: no task of {key!r} ever started"]
    worst = max(
        ((j - i + 1) - (burst + rate * (starts[j] - starts[i] + STAMP_MS) / period), i, j)
        for i in range(len(starts))
        for j in range(i, len(starts))
    )
    if worst[0] > 0:
        _, i, j = worst
        why = "the pace was not applied" if (i, j) == (0, len(starts) - 1) else "faster than the limit"
        out.append(
            f"{j - i + 1} tasks of {key!r} started within {starts[j] - starts[i]:.0f} ms, {why}: at most "
            f"{burst} + {rate} per {period} ms may (P-RATE-2)"
        )
    return out


def not_held(run: ScenarioRun, group: str, key: str, starts: list[float], nth: int) -> list[str]:
    """P-RATE-1: tasks held for a token block nothing: every task of `group` (enqueued
    behind the paced ones) ended before the `nth` start of `key`."""
    from .checks import group_attempts, ms

    found, out = group_attempts(run, group, "rate_paced")
    if out:
        return out
    if len(starts) < nth:
        return [f"rate_paced: {key!r} had {len(starts)} starts, fewer than the {nth} to compare with"]
    for ref, attempts in found.items():
        ended = ms(attempts[-1].get("ended_at")) if attempts else None
        if ended is None or ended > starts[nth - 1]:
            late = "never ended" if ended is None else f"ended {ended - starts[nth - 1]:.0f} ms after"
            out.append(f"{ref} {late} start {nth} of {key!r}: tasks held for a token held it back (P-RATE-1)")
    return out
