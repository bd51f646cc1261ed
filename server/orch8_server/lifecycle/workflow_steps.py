"""The instance state machine (P-WF-3..8): what happens to an instance when a step's task
ends, a sleep timer fires, or an operator cancels or retries it.

Pure rules: a `Machine` changes the instance row in memory and lists the actions the
caller performs in the same transaction (dispatch a task, arm a timer, cancel a task).
It knows nothing of storage or HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orch8_server.lifecycle.workflow_defs import ON_ERROR, SLEEP, BadReference, resolve
from orch8_server.storage.base import Row

FINAL = ("completed", "failed", "cancelled")
BAD_REFERENCE = "bad_reference"
# What a task of an instance does (P-WF-4): a step (a parallel child is a step), a step's
# fallback, or the sequence's on_error step.
STEP, FALLBACK, ON_ERROR_TASK = "step", "fallback", "on_error"


def _key_part(part: str) -> str:
    """`part` with no ":" in it, injectively ("%" -> "%25" first, then ":" -> "%3A"); a
    no-op for the ids the contract allows (StepId, inst_ + ULID)."""
    return part.replace("%", "%25").replace(":", "%3A")


# P-TASK-3: callers may not use this prefix, so no enqueued task is adopted as a step's.
ENGINE_KEY_PREFIX = "wf:"


def task_key(instance_id: str, run: int, kind: str, step_id: str) -> str:
    """P-WF-4: the idempotency key of one task of an instance run, distinct for every
    distinct (instance, run, kind, step) by construction: parts are joined by ":", which no
    part contains (ids are escaped, run is an integer, kind is one of three words), and
    the on_error task has no step part at all, so no step id can make another task's key.
    `wf:<instance>:<run>:step:<id>`, `...:fallback:<id>`, `wf:<instance>:<run>:on_error`."""
    head = f"{ENGINE_KEY_PREFIX}{_key_part(instance_id)}:{int(run)}"
    if kind == ON_ERROR_TASK:
        return f"{head}:{ON_ERROR_TASK}"
    if kind not in (STEP, FALLBACK):
        raise ValueError(f"unknown task kind {kind!r}")
    return f"{head}:{kind}:{_key_part(step_id)}"


def record(step_id: str, group: str | None = None) -> dict[str, Any]:
    return {
        "id": step_id, "group": group, "status": "pending", "task_id": None, "output": None,
        "error": None, "attempts": 0, "fallback": False, "started_at": None, "finished_at": None,
    }  # fmt: skip


def initial_state(definition: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    steps = []
    for step in definition["steps"]:
        steps.append(record(step["id"]))
        steps += [record(child["id"], step["id"]) for child in step.get("parallel", [])]
    return {"run": 1, "position": 0, "steps": steps, "on_error": None, "failure": None,
            "headers": headers}  # fmt: skip


def failure(message: str, code: str, details: Any = None) -> dict[str, Any]:
    return {"message": message, "code": code, "retryable": False, "details": details}


@dataclass
class Dispatch:
    """Create the worker task of a step (its idempotency key makes it once per run)."""

    record: dict[str, Any]
    action: dict[str, Any]  # handler, params (resolved), queue_name, priority, retry
    key: str


@dataclass
class Timer:
    step_id: str
    run: int
    fire_at: int


@dataclass
class Machine:
    inst: Row  # the instance row; `state` is changed in place
    definition: dict[str, Any]
    now: int
    dispatches: list[Dispatch] = field(default_factory=list)
    timers: list[Timer] = field(default_factory=list)
    cancels: list[str] = field(default_factory=list)  # task ids

    @property
    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.inst["state"]
        return state

    def _rec(self, step_id: str) -> dict[str, Any]:
        return next(r for r in self.state["steps"] if r["id"] == step_id)

    def _step(self, step_id: str) -> dict[str, Any]:
        for step in self.definition["steps"]:
            if step["id"] == step_id:
                return dict(step)
            for child in step.get("parallel", []):
                if child["id"] == step_id:
                    return dict(child)
        raise KeyError(step_id)

    def _scope(self) -> dict[str, Any]:
        outputs = {r["id"]: {"output": r["output"]} for r in self.state["steps"]
                   if r["status"] == "completed"}  # fmt: skip
        return {"input": self.inst["input"], "steps": outputs}

    def _touch(self) -> None:
        self.inst["updated_at"] = self.now

    # Starting steps ------------------------------------------------------------------

    def start(self) -> None:
        """Start the step at the instance's position (P-WF-4)."""
        self._touch()
        step = self.definition["steps"][self.state["position"]]
        rec = self._rec(step["id"])
        rec.update(status="running", started_at=rec["started_at"] or self.now)
        if "parallel" not in step:
            self._start_leaf(rec, step, STEP)
            return
        for child in step["parallel"]:  # fan out (P-WF-3); done children keep their output
            crec = self._rec(child["id"])
            if crec["status"] != "completed" and rec["status"] == "running":
                self._start_leaf(crec, child, STEP)
        if rec["status"] == "running":
            self._join(rec)

    def _start_leaf(self, rec: dict[str, Any], action: dict[str, Any], kind: str) -> None:
        fallback = kind != STEP  # a fallback's or on_error's failure is final (P-WF-6)
        rec.update(status="running", started_at=rec["started_at"] or self.now, task_id=None)
        try:
            params = resolve(action.get("params", {}), self._scope())
        except BadReference as exc:  # P-WF-2: a permanent failure of the step
            self._leaf_failed(rec, failure(
                f"reference {exc.path} has no value", BAD_REFERENCE, {"$from": exc.path}
            ), fallback_done=fallback)  # fmt: skip
            return
        if action["handler"] == SLEEP:  # P-WF-3: built in, a timer row
            duration = params.get("duration_ms") if isinstance(params, dict) else None
            if not isinstance(duration, int) or isinstance(duration, bool) or duration < 0:
                self._leaf_failed(rec, failure(
                    "sleep needs an integer duration_ms", BAD_REFERENCE, {"duration_ms": duration}
                ), fallback_done=fallback)  # fmt: skip
                return
            self.timers.append(Timer(rec["id"], self.state["run"], self.now + duration))
            return
        key = task_key(self.inst["id"], self.state["run"], kind, rec["id"])
        self.dispatches.append(Dispatch(rec, {**action, "params": params}, key))

    # Outcomes ------------------------------------------------------------------------

    def on_task(self, task: Row) -> bool:
        """A step's task reached a final state (P-WF-5); False if it is not current."""
        if self.inst["status"] != "running":
            return False
        candidates = [*self.state["steps"], self.state["on_error"] or {}]
        rec = next((r for r in candidates if r.get("task_id") == task["id"]
                    and r.get("status") == "running"), None)  # fmt: skip
        if rec is None:
            return False
        self._touch()
        rec["attempts"] += int(task["attempt"])
        if task["status"] == "completed":
            self._leaf_completed(rec, task["output"])
        else:
            error = task["error"] or failure(f"task {task['status']}", task["status"])
            self._leaf_failed(rec, error, fallback_done=rec["fallback"])
        return True

    def on_timer(self, step_id: str, run: int) -> bool:
        if self.inst["status"] != "running" or run != self.state["run"]:
            return False
        on_error = self.state["on_error"]
        if step_id == ON_ERROR and on_error is not None:  # an on_error step that sleeps
            rec = on_error
        else:
            rec = next((r for r in self.state["steps"] if r["id"] == step_id), None)
        if rec is None or rec["status"] != "running" or rec["task_id"] is not None:
            return False
        self._touch()
        self._leaf_completed(rec, None)
        return True

    def _leaf_completed(self, rec: dict[str, Any], output: Any) -> None:
        rec.update(status="completed", output=output, finished_at=self.now)
        if rec["id"] == ON_ERROR and rec is self.state["on_error"]:
            self._finish_failed()
        elif rec["group"] is not None:
            self._join(self._rec(rec["group"]))
        else:
            self._advance()

    def _join(self, group: dict[str, Any]) -> None:
        children = [r for r in self.state["steps"] if r["group"] == group["id"]]
        if all(c["status"] == "completed" for c in children):  # P-WF-3: the join
            output = {c["id"]: c["output"] for c in children}
            group.update(status="completed", output=output, finished_at=self.now)
            self._advance()

    def _advance(self) -> None:
        self.state["position"] += 1
        if self.state["position"] < len(self.definition["steps"]):
            self.start()
            return
        last = self._rec(self.definition["steps"][-1]["id"])
        self.inst.update(status="completed", output=last["output"], finished_at=self.now)

    def _leaf_failed(self, rec: dict[str, Any], error: Any, fallback_done: bool) -> None:
        """P-WF-6: the fallback first, then on_error, then the instance fails."""
        if rec["id"] == ON_ERROR and rec is self.state["on_error"]:
            rec.update(status="failed", error=error, finished_at=self.now)
            self._finish_failed()
            return
        step = self._step(rec["id"])
        if "fallback" in step and not fallback_done:
            rec.update(fallback=True, error=error)
            self._start_leaf(rec, step["fallback"], FALLBACK)
            return
        rec.update(status="failed", error=error, finished_at=self.now)
        if rec["group"] is not None:
            group = self._rec(rec["group"])
            for sib in self.state["steps"]:
                if sib["group"] == group["id"] and sib["status"] in ("running", "pending"):
                    self._cancel_record(sib)
            group.update(status="failed", error=error, finished_at=self.now)
        self._failing(error)

    def _failing(self, error: Any) -> None:
        self.state["failure"] = error
        on_error = self.definition.get("on_error")
        if on_error is None:
            self._finish_failed()
            return
        rec = record(ON_ERROR)
        self.state["on_error"] = rec
        self._start_leaf(rec, on_error, ON_ERROR_TASK)  # no fallback of its own

    def _finish_failed(self) -> None:
        self.inst.update(status="failed", error=self.state["failure"], finished_at=self.now)

    def _cancel_record(self, rec: dict[str, Any]) -> None:
        if rec["status"] == "running" and rec["task_id"] is not None:
            self.cancels.append(rec["task_id"])  # P-WF-7: as cancelTask does
        rec.update(status="cancelled", finished_at=self.now)

    # Operator actions -----------------------------------------------------------------

    def cancel(self) -> None:
        """P-WF-7: the instance and its running steps' tasks become cancelled."""
        self._touch()
        for rec in [*self.state["steps"], self.state["on_error"] or {}]:
            if rec.get("status") in ("running", "pending") and rec.get("started_at"):
                self._cancel_record(rec)
        self.inst.update(status="cancelled", finished_at=self.now)

    def retry(self) -> None:
        """P-WF-8: a failed instance resumes from the failed step; earlier outputs stay."""
        self._touch()
        state = self.state
        state["run"] += 1
        state.update(on_error=None, failure=None)
        step = self.definition["steps"][state["position"]]
        ids = {step["id"], *(c["id"] for c in step.get("parallel", []))}
        for rec in state["steps"]:
            if rec["id"] in ids and rec["status"] != "completed":
                rec.update(record(rec["id"], rec["group"]), attempts=rec["attempts"])
        self.inst.update(status="running", error=None, finished_at=None)
        self.start()
