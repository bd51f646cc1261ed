"""P-WF-4: the idempotency keys of an instance's tasks cannot collide, by construction.

No server: the key builder over adversarial names, and the state machine driven through
the original collision (a step named on_error with a fallback, and an on_error step).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from orch8_server.lifecycle.workflow_steps import (
    FALLBACK,
    ON_ERROR_TASK,
    STEP,
    Machine,
    initial_state,
    task_key,
)
from orch8_server.lifecycle.workflow_tree import compile_definition

# Names chosen to fool a naive join: the engine's own words, separators, escapes.
IDS = [
    "a", "b", "on_error", "fallback", "step", "wf", "1", "2", "run", "a_b", "a-b",
    "a:b", "a:fallback", "on_error:fallback", "step:a", ":", "::", "%", "%3A", "%253A",
    "a%3Ab", "a%b", "fallback:on_error", "1:step:a", "", "-", "_",
]  # fmt: skip
INSTANCES = ["inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9", "inst_X", "inst_X:1", "inst_X:1:step", "inst_X%3A1"]
RUNS = [1, 2, 11, 12]


def test_distinct_tasks_have_distinct_keys_P_WF_4() -> None:
    """Every (instance, run, kind, step id) names one key and no two share one; the
    on_error task of a run is one task whatever step id the caller passes."""
    owners: dict[str, tuple[str, int, str, str]] = {}
    for inst, run, step_id in itertools.product(INSTANCES, RUNS, IDS):
        for kind in (STEP, FALLBACK, ON_ERROR_TASK):
            task = (inst, run, kind, "" if kind == ON_ERROR_TASK else step_id)
            key = task_key(inst, run, kind, step_id)
            assert owners.setdefault(key, task) == task, (key, owners[key], task)
    assert len(owners) == len(INSTANCES) * len(RUNS) * (2 * len(IDS) + 1)


def test_keys_of_valid_ids_read_as_documented_P_WF_4() -> None:
    inst = "inst_01JDZ8Y6M3X9K2Q4R5S6T7V8W9"
    assert task_key(inst, 3, STEP, "resize") == f"wf:{inst}:3:step:resize"
    assert task_key(inst, 3, FALLBACK, "resize") == f"wf:{inst}:3:fallback:resize"
    assert task_key(inst, 3, ON_ERROR_TASK, "on_error") == f"wf:{inst}:3:on_error"
    with pytest.raises(ValueError):
        task_key(inst, 3, "other", "resize")


def _task(dispatch: Any, status: str) -> dict[str, Any]:
    return {"id": dispatch.key, "status": status, "attempt": 1, "output": None,
            "error": {"message": "boom", "code": "boom", "retryable": False, "details": None}}  # fmt: skip


def test_a_step_named_on_error_and_the_on_error_step_get_two_tasks_P_WF_4_P_WF_6() -> None:
    """The original collision, in the state machine: a definition stored before step ids
    were reserved, its step `on_error` failing, then its fallback: the on_error step is a
    third, distinct task, and when it completes the instance is failed."""
    definition = {
        "steps": [{"id": "on_error", "handler": "h", "fallback": {"handler": "fb"}}],
        "on_error": {"handler": "cleanup"},
    }
    tree = compile_definition(definition, templates=False)  # stored before ids were reserved
    inst: dict[str, Any] = {"id": "inst_X", "input": {}, "status": "running",
                            "state": initial_state(tree, {})}  # fmt: skip
    keys: list[str] = []
    machine = Machine(inst, tree, now=1)
    machine.start()
    for _ in range(3):  # step, fallback, on_error: each fails or completes in turn
        (dispatch,) = machine.dispatches
        keys.append(dispatch.key)
        dispatch.record["task_id"] = dispatch.key  # as _apply does with the stored task
        machine = Machine(inst, tree, now=2)
        last = dispatch.action["handler"] == "cleanup"
        assert machine.on_task(_task(dispatch, "completed" if last else "failed"))
    assert len(set(keys)) == 3, keys
    assert inst["status"] == "failed" and inst["state"]["on_error"]["status"] == "completed"


def test_a_1x_instance_mid_group_is_upgraded_and_joins_P_WF_3() -> None:
    """An instance stored by 1.x (no keys, a `position`) in the middle of a parallel group:
    upgraded on load, its group still joins when the last child completes."""
    definition = {"steps": [{"id": "g", "parallel": [{"id": "a", "handler": "h"},
                                                     {"id": "b", "handler": "h"}]}]}  # fmt: skip
    tree = compile_definition(definition, templates=False)
    rec = {"group": None, "status": "running", "task_id": None, "output": None, "error": None,
           "attempts": 0, "fallback": False, "started_at": 1, "finished_at": None}  # fmt: skip
    state = {"run": 1, "position": 0, "on_error": None, "failure": None, "headers": {},
             "steps": [{**rec, "id": "g"},
                       {**rec, "id": "a", "group": "g", "status": "completed", "output": 1},
                       {**rec, "id": "b", "group": "g", "task_id": "task_b"}]}  # fmt: skip
    inst: dict[str, Any] = {"id": "inst_X", "input": {}, "status": "running", "state": state}
    machine = Machine(inst, tree, now=2)
    task = {"id": "task_b", "status": "completed", "attempt": 1, "output": 2, "error": None}
    assert machine.on_task(task)
    assert inst["status"] == "completed" and inst["output"] == {"a": 1, "b": 2}
    assert [r["lane"] for r in state["steps"]] == [None, "branch:0", "branch:1"]
