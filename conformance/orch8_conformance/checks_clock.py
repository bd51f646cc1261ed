"""The test clock in scenarios (P-CLOCK-1..3): the `advance_clock` step and `within_ms`.

A scenario whose `server` block says `"test_clock": true` runs the reference server with
`--test-clock`; its timeline moves time with `advance_clock` (`by_ms` or `to_next_timer`),
the way an SDK's test helper does: only once the worker is idle (no task running, none
pending), since a skip past a held task's lease loses it (P-CLOCK-3). `within_ms` bounds the
wall time from w1's registration to the end state, so a skipped hour must really be skipped.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .api import ApiError

if TYPE_CHECKING:
    from .run import ScenarioRun

IDLE_POLL_S = 0.02


class StepError(Exception):
    """The step could not be done (never idle, or the server refused): the run stops."""


def advance(run: ScenarioRun, step: dict, deadline: float, what: str) -> list[str]:
    """Wait for idle (P-CLOCK-3), advance, and check the answer against GET /clock before it."""
    try:
        while not step.get("while_busy") and (busy := _busy(run)):
            if time.time() * 1000 > deadline:
                raise StepError(f"{what}: the worker never became idle within timeout_ms ({busy})")
            time.sleep(IDLE_POLL_S)
        before = run.api.call("GET", "/clock")
        body = {"to_next_timer": True} if step.get("to_next_timer") else {"by_ms": step["by_ms"]}
        after = run.api.call("POST", "/clock/advance", body)
    except ApiError as err:
        raise StepError(f"{what}: {err}") from None
    reasons = []
    if before["mode"] != "test":
        reasons.append(f"{what}: GET /clock says mode {before['mode']!r}, expected 'test' (P-CLOCK-1)")
    if step.get("to_next_timer") and after["now"] != before["next_timer_at"]:
        reasons.append(
            f"{what}: moved to {after['now']}, expected the next timer {before['next_timer_at']} (P-CLOCK-3)"
        )
    if "advanced_ms" in step and after["advanced_ms"] != step["advanced_ms"]:
        reasons.append(f"{what}: advanced {after['advanced_ms']} ms, expected {step['advanced_ms']}")
    return reasons


def _busy(run: ScenarioRun) -> str | None:
    """A task that is running or waiting to be claimed, or None when the workers are idle."""
    for status in ("running", "pending"):
        page = run.api.call("GET", f"/tasks?status={status}&limit=1")
        if page["tasks"]:
            task = page["tasks"][0]
            return f"task {task['id']} ({task['handler_name']}) is {status}"
    return None


def within(run: ScenarioRun, reached_ms: float) -> list[str]:
    """`within_ms`: the end state came this soon (wall time) after w1's first request, its
    registration: the adapter's start-up is not the clock's business."""
    bound = run.scenario["expect"].get("within_ms")
    if bound is None:
        return []
    first = min((r["t"] for r in list(run.proxy.requests)), default=run.t0)
    if reached_ms - first <= bound:
        return []
    return [f"the end state came {reached_ms - first:.0f} ms after w1 registered, expected within {bound} ms"]
