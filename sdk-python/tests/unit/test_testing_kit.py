"""The test kit (P-KIT-1..6): every case of conformance/kit-cases.json, plus Python's own.

Each handler of the table is written here under its name; a case naming a handler this file
lacks fails, so the three SDKs' kits cannot drift apart.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from orch8 import PermanentError, RetryableError, Yield
from orch8.errors import LeaseLostError, TaskCancelledError
from orch8.testing import Heartbeat, Outcome, TestTask
from orch8.worker import TaskContext

# scripts/runtimes.py runs a copy of these tests outside the repo and names the repo's spec.
SPEC = Path(os.environ.get("ORCH8_SPEC") or Path(__file__).resolve().parents[3] / "openapi.yaml")
CASES = json.loads((SPEC.parent / "conformance" / "kit-cases.json").read_text("utf-8"))["cases"]
SIGNAL_WAIT_S = 10  # a bound for a broken kit, never reached when the signal fires

KitHandler = Callable[[TestTask, TaskContext], Any]


def reads_task(_: TestTask, ctx: TaskContext) -> Any:
    return {
        "params": ctx.params,
        "context": ctx.context,
        "headers": ctx.headers,
        "attempt": ctx.attempt,
        "max_attempts": ctx.max_attempts,
        "checkpoint": ctx.checkpoint,
        "task_id": ctx.id,
        "handler_name": ctx.handler_name,
        "queue_name": ctx.queue_name,
        "lease_id": ctx.lease_id,
    }


def returns_nested(_: TestTask, ctx: TaskContext) -> Any:
    value: list[Any] = []
    for _level in range(ctx.params["depth"] - 1):
        value = [value]
    return value


def raises_retryable(_: TestTask, ctx: TaskContext) -> Any:
    p = ctx.params
    raise RetryableError(
        p["message"],
        code=p.get("code", "retryable_error"),
        retry_after_ms=p.get("retry_after_ms"),
        checkpoint=p.get("checkpoint"),
    )


def raises_permanent(_: TestTask, ctx: TaskContext) -> Any:
    p = ctx.params
    raise PermanentError(
        p["message"],
        code=p.get("code", "permanent_error"),
        details=p.get("details"),
        checkpoint=p.get("checkpoint"),
    )


def yields(_: TestTask, ctx: TaskContext) -> Any:
    raise Yield(checkpoint=ctx.params.get("checkpoint"), delay_ms=ctx.params.get("delay_ms", 0))


def raises_unhandled(_: TestTask, ctx: TaskContext) -> Any:
    raise RuntimeError(ctx.params["message"])


def raises_huge_message(_: TestTask, ctx: TaskContext) -> Any:
    raise PermanentError(ctx.params["char"] * ctx.params["repeat"])


def raises_huge_details(_: TestTask, ctx: TaskContext) -> Any:
    raise PermanentError("details too big", details={"blob": "x" * ctx.params["bytes"]})


def heartbeats(_: TestTask, ctx: TaskContext) -> Any:
    for progress in ctx.params["progress"]:
        ctx.heartbeat(progress=progress)
    return {"sent": len(ctx.params["progress"])}


def saves_checkpoints(_: TestTask, ctx: TaskContext) -> Any:
    start = (ctx.checkpoint or {}).get("page", 0)
    last = start + ctx.params["pages"]
    for page in range(start + 1, last + 1):
        ctx.heartbeat(progress=page, checkpoint={"page": page})
    return {"first": start + 1, "last": last}


def waits_for_signal(task: TestTask, ctx: TaskContext) -> Any:
    try:
        ctx.heartbeat(progress="started")
    except LeaseLostError:
        task.logger.warning("heartbeat refused: lease_lost")
    except TaskCancelledError:
        task.logger.warning("heartbeat refused: task_cancelled")
    if not ctx.cancelled.wait(SIGNAL_WAIT_S):
        return "never stopped"
    task.logger.info("stopped: %s", ctx.cancel_reason)
    return "late result"


HANDLERS: dict[str, KitHandler] = {
    "reads_task": reads_task,
    "returns_params": lambda _, ctx: ctx.params,
    "returns_null": lambda _, ctx: None,
    "returns_non_json": lambda _, ctx: math.nan,
    "returns_string_of": lambda _, ctx: "x" * ctx.params["bytes"],
    "returns_nested": returns_nested,
    "raises_retryable": raises_retryable,
    "raises_permanent": raises_permanent,
    "yields": yields,
    "raises_unhandled": raises_unhandled,
    "raises_huge_message": raises_huge_message,
    "raises_huge_details": raises_huge_details,
    "heartbeats": heartbeats,
    "saves_checkpoints": saves_checkpoints,
    "waits_for_signal": waits_for_signal,
}
FIRE = {"cancel": TestTask.cancel, "lose_lease": TestTask.lose_lease, "shutdown": TestTask.shutdown}


def run_case(case: dict[str, Any]) -> tuple[TestTask, Outcome]:
    """Build the case's TestTask, arm its trigger, run its handler."""
    trigger = case.get("trigger")
    beats = 0

    def on_heartbeat(_: Heartbeat) -> None:
        nonlocal beats
        beats += 1
        if trigger is not None and beats == trigger["at_heartbeat"]:
            fire(trigger)

    def fire(t: dict[str, Any]) -> None:
        FIRE[t["fire"]](task)
        if "then" in t:
            FIRE[t["then"]](task)

    task = TestTask(on_heartbeat=on_heartbeat, **case["task"])
    if trigger is not None and trigger["at_heartbeat"] == 0:
        fire(trigger)
    handler = HANDLERS[case["handler"]]  # a KeyError: this SDK lacks a handler of the table
    return task, task.run(lambda ctx: handler(task, ctx))


def check(case: dict[str, Any], task: TestTask, outcome: Outcome) -> None:
    """Every key of the case's `expect` (kit-cases.json says what each means)."""
    want = case["expect"]
    got = asdict(outcome)
    for key in ("status", "output", "error", "code", "retryable", "retry_after_ms", "delay_ms"):
        if key in want:
            assert got[key] == want[key], key
    for key in ("details", "checkpoint"):
        if key in want:
            assert got[key] == want[key], key
    if "heartbeats" in want:
        assert [asdict(hb) for hb in task.heartbeats] == want["heartbeats"]
    if "checkpoints" in want:
        assert task.checkpoints == want["checkpoints"]
    if "logs" in want:
        assert [asdict(line) for line in task.logs] == want["logs"]
    if "error_endswith" in want:
        assert outcome.error is not None and outcome.error.endswith(want["error_endswith"])
    if "error_bytes" in want:
        assert outcome.error is not None and len(outcome.error.encode()) == want["error_bytes"]
    if "details_keys" in want:
        assert sorted(outcome.details or {}) == want["details_keys"]
    for key, value in want.get("details_subset", {}).items():
        assert (outcome.details or {})[key] == value, key


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_kit_case(case: dict[str, Any]) -> None:
    check(case, *run_case(case))


def test_every_handler_of_the_table_is_here() -> None:
    assert sorted({c["handler"] for c in CASES}) == sorted(HANDLERS)


def test_a_broken_expectation_fails() -> None:
    """The checks can fail: the first case with its status changed is refused."""
    case = {**CASES[0], "expect": {**CASES[0]["expect"], "status": "failed"}}
    with pytest.raises(AssertionError):
        check(case, *run_case(case))


def test_async_handler_is_cancelled_at_shutdown() -> None:
    """P-KIT-4: as the worker does after the grace period, whatever the handler waits for."""
    task = TestTask(on_heartbeat=lambda _: task.shutdown())

    stopped_by: list[str] = []

    async def handler(ctx: TaskContext) -> str:
        with pytest.raises(LeaseLostError):
            await ctx.heartbeat_async(progress=1)
        try:
            await asyncio.wait_for(asyncio.Event().wait(), SIGNAL_WAIT_S)
        except asyncio.CancelledError:
            stopped_by.append("cancelled")
            raise
        return "unreachable"

    outcome = task.run(handler)
    assert stopped_by == ["cancelled"]
    assert (outcome.status, outcome.code, outcome.retryable) == ("failed", "shutdown", True)


def test_trigger_from_another_thread() -> None:
    """P-KIT-4: a test fires a trigger from its own thread once the handler has started."""
    task = TestTask()
    started = threading.Event()

    def handler(ctx: TaskContext) -> str:
        started.set()
        assert ctx.cancelled.wait(SIGNAL_WAIT_S)
        return "dropped"

    firing = threading.Thread(target=lambda: started.wait(SIGNAL_WAIT_S) and task.lose_lease())
    firing.start()
    outcome = task.run(handler)
    firing.join()
    assert outcome == Outcome(status="lease_lost")


def test_run_async_inside_a_loop_and_heartbeat_extends_the_lease() -> None:
    task = TestTask(lease_ms=1_000)

    async def handler(ctx: TaskContext) -> str:
        before = ctx.lease_expires_at
        await ctx.heartbeat_async(progress=1, lease_ms=3_600_000)
        return "extended" if (ctx.lease_expires_at - before).total_seconds() > 3000 else "kept"

    assert asyncio.run(task.run_async(handler)).output == "extended"


def test_a_task_runs_once_and_output_is_what_json_stores() -> None:
    task = TestTask()
    assert task.run(lambda ctx: {"pair": (1, 2), 3: "three"}).output == {
        "pair": [1, 2],
        "3": "three",
    }
    with pytest.raises(RuntimeError, match="runs one handler once"):
        task.run(lambda ctx: None)
