"""The instance state machine (P-WF-3..8, P-WF-11..13): what happens to an instance when a
step's task ends, a timer fires, a child instance ends, or an operator cancels or retries.

Pure rules: a `Machine` changes the instance row in memory and lists the actions the
caller performs in the same transaction (dispatch a task, arm a timer, cancel a task,
start or cancel a child instance). It knows nothing of storage or HTTP.

The instance keeps one record per block run (`state.steps`), keyed by `key`: the block id,
prefixed by `<loop key>[<i>]/` inside iteration i of a loop or for_each. A record names its
container (`group`) and the container's list it is in (`lane`), so what runs next is found
from the compiled tree (workflow_tree.py): the next block of the same list, or, when the
list is done, the container's rule. Work is queued on an agenda and drained in a loop, so
a long chain of blocks that end at once (empty routes, zero-item loops) needs no recursion.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from orch8_server.lifecycle import expressions as ex
from orch8_server.lifecycle.workflow_render import BadReference, Renderer
from orch8_server.lifecycle.workflow_scope import Scope
from orch8_server.lifecycle.workflow_tree import ON_ERROR, SLEEP, Block, Tree
from orch8_server.storage.base import Row

FINAL = ("completed", "failed", "cancelled")
BAD_REFERENCE = "bad_reference"
MAX_SUB_DEPTH = 16  # P-WF-13: sub-sequences nest at most this deep
# What a rendered step key must be: the contract's ConcurrencyKey and RateLimitKey
_CONCURRENCY_KEY = re.compile(r"(?s).{1,200}")
_RATE_LIMIT_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,200}")
# What a task of an instance does (P-WF-4): a step, a step's fallback, the on_error step;
# `sub` names the idempotency key of a sub_sequence's child instance.
STEP, FALLBACK, ON_ERROR_TASK, SUB = "step", "fallback", "on_error", "sub"
ENGINE_KEY_PREFIX = "wf:"  # P-TASK-3: callers may not use it, so no task is adopted as a step's


def _key_part(part: str) -> str:
    """`part` with no ":" in it, injectively ("%" -> "%25" first, then ":" -> "%3A")."""
    return part.replace("%", "%25").replace(":", "%3A")


def task_key(instance_id: str, run: int, kind: str, step_id: str) -> str:
    """P-WF-4: the idempotency key of one task (or child instance) of an instance run,
    distinct for every distinct (instance, run, kind, step key) by construction: parts are
    joined by ":", which no part contains, and the on_error task has no step part.
    `wf:<instance>:<run>:step:<key>`, `...:fallback:<key>`, `...:sub:<key>`,
    `wf:<instance>:<run>:on_error`."""
    head = f"{ENGINE_KEY_PREFIX}{_key_part(instance_id)}:{int(run)}"
    if kind == ON_ERROR_TASK:
        return f"{head}:{ON_ERROR_TASK}"
    if kind not in (STEP, FALLBACK, SUB):
        raise ValueError(f"unknown task kind {kind!r}")
    return f"{head}:{kind}:{_key_part(step_id)}"


def record(block_id: str, group: str | None = None, *, key: str | None = None,
           kind: str = "step", lane: str | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "key": key or block_id, "id": block_id, "type": kind, "group": group, "lane": lane,
        "status": "pending", "task_id": None, "output": None, "error": None, "attempts": 0,
        "fallback": False, "started_at": None, "finished_at": None, "chosen": None,
        "iterations": None, "child_instance_id": None,
    }  # fmt: skip


def initial_state(
    tree: Tree, headers: dict[str, str], config: dict[str, Any] | None = None
) -> dict[str, Any]:
    steps = [record(b.id, b.parent, kind=b.type, lane=b.lane) for b in tree.preorder()]
    return {"model": 2, "run": 1, "steps": steps, "on_error": None, "failure": None,
            "headers": headers, "config": config or {}}  # fmt: skip


def upgrade(state: dict[str, Any]) -> None:
    """A 1.x instance's records (steps and parallel groups, no keys) as block records."""
    if state.get("model", 1) >= 2:
        return
    groups = {r["group"] for r in state["steps"] if r["group"] is not None}
    lanes: dict[str, int] = {}
    for r in state["steps"]:
        kind = "parallel" if r["id"] in groups else "step"
        lane = None
        if r["group"] is not None:
            lane = f"branch:{lanes.get(r['group'], 0)}"
            lanes[r["group"]] = lanes.get(r["group"], 0) + 1
        r.update({**record(r["id"], r["group"], kind=kind, lane=lane), **r}, type=kind, lane=lane)
    for r in state["steps"]:  # a running group's join counts the children done so far
        if r["type"] == "parallel" and r["status"] == "running":
            done = sum(c["group"] == r["id"] and c["status"] == "completed" for c in state["steps"])
            r["internal"] = {"done": done, "failed": 0}
    if state.get("on_error") is not None:
        state["on_error"] = {**record(ON_ERROR), **state["on_error"]}
    state.pop("position", None)
    state["model"] = 2


def failure(message: str, code: str, details: Any = None) -> dict[str, Any]:
    return {"message": message, "code": code, "retryable": False, "details": details}


def scope_of(rec: dict[str, Any]) -> str:
    key: str = rec["key"]
    return key[: len(key) - len(rec["id"])]


@dataclass
class Dispatch:
    """Create the worker task of a step (its idempotency key makes it once per run)."""

    record: dict[str, Any]
    action: dict[str, Any]  # handler, params (resolved), queue_name, priority, retry, headers
    key: str


@dataclass
class Timer:
    step_id: str  # the record key
    run: int
    fire_at: int


@dataclass
class SubStart:
    """Start the child instance of a sub_sequence block (P-WF-13)."""

    record: dict[str, Any]
    sequence: str
    version: int | None
    input: Any
    key: str  # the child's idempotency key


@dataclass
class Machine:
    inst: Row  # the instance row; `state` is changed in place
    tree: Tree
    now: int
    dispatches: list[Dispatch] = field(default_factory=list)
    timers: list[Timer] = field(default_factory=list)
    cancels: list[str] = field(default_factory=list)  # task ids
    subs: list[SubStart] = field(default_factory=list)
    sub_cancels: list[str] = field(default_factory=list)  # child instance ids

    def __post_init__(self) -> None:
        upgrade(self.state)
        self._by_key: dict[str, dict[str, Any]] = {r["key"]: r for r in self.state["steps"]}
        self._children: dict[str | None, list[dict[str, Any]]] = {}
        for r in self.state["steps"]:
            self._children.setdefault(r["group"], []).append(r)
        self._agenda: deque[tuple[Any, ...]] = deque()
        self._by_task: dict[str, dict[str, Any]] | None = None

    @property
    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.inst["state"]
        return state

    def _touch(self) -> None:
        self.inst["updated_at"] = self.now

    def _running(self) -> bool:
        return bool(self.inst["status"] == "running")

    def _ensure(
        self, block: Block, scope: str, group: str | None, lane: str | None
    ) -> dict[str, Any]:
        key = scope + block.id
        rec = self._by_key.get(key)
        if rec is None:  # a block inside a loop body: one record per iteration
            rec = record(block.id, group, key=key, kind=block.type, lane=lane)
            self.state["steps"].append(rec)
            self._by_key[key] = rec
            self._children.setdefault(group, []).append(rec)
        return rec

    def record_type(self, key: str) -> str | None:
        rec = self._by_key.get(key)
        return None if rec is None else str(rec["type"])

    def child_of(self, key: str) -> str | None:
        rec = self._by_key.get(key)
        return None if rec is None else rec["child_instance_id"]

    # The agenda -------------------------------------------------------------------------

    def _drain(self) -> None:
        while self._agenda:
            op, *args = self._agenda.popleft()
            if self._running():
                op(*args)

    def _complete(self, rec: dict[str, Any], output: Any) -> None:
        rec.update(status="completed", output=output, finished_at=self.now)
        self._agenda.append((self._after, rec))

    def _fail(self, rec: dict[str, Any], error: Any) -> None:
        rec.update(status="failed", error=error, finished_at=self.now)
        self._agenda.append((self._failed, rec))

    def _after(self, rec: dict[str, Any]) -> None:
        """A block completed: the next block of its list (P-WF-3)."""
        if rec is self.state["on_error"]:
            self._finish_failed()
            return
        block = self.tree.blocks[rec["id"]]
        self._list(rec["group"], rec["lane"], scope_of(rec), block.index + 1)

    def _list(self, group: str | None, lane: str | None, scope: str, index: int) -> None:
        """Start the list's first block from `index` that has not completed (a retry
        resumes this way, P-WF-8); when none is left, the list is done."""
        container = None if group is None else self._by_key[group]
        if container is not None and container["status"] != "running":
            return  # a race already won, a group already failed: a stale continuation
        ids = self.tree.lane(None if container is None else container["id"], lane)
        while index < len(ids):
            rec = self._ensure(self.tree.blocks[ids[index]], scope, group, lane)
            if rec["status"] != "completed":
                self._start(rec)
                return
            index += 1
        output = self._by_key[scope + ids[-1]]["output"] if ids else None
        if container is None:
            self.inst.update(status="completed", output=output, finished_at=self.now)
        else:
            self._lane_done(container, lane or "", output)

    # Starting blocks (P-WF-11) ------------------------------------------------------------

    def start(self) -> None:
        """Start a new instance (P-WF-4), or resume one being retried (P-WF-8)."""
        self._touch()
        self._list(None, None, "", 0)
        self._drain()

    def _start(self, rec: dict[str, Any]) -> None:
        rec.update(status="running", started_at=rec["started_at"] or self.now)
        block = self.tree.blocks[rec["id"]]
        inner = self._internal(rec)
        kind, key, scope = block.type, rec["key"], scope_of(rec)
        if kind == "step":
            self._start_leaf(rec, block.spec, block.params, STEP, block.key, block.rate_key)
        elif kind in ("parallel", "race"):
            inner.update(done=0, failed=0)
            for lane in block.lanes:
                self._agenda.append((self._list, key, lane, scope, 0))
        elif kind == "router":
            if rec["chosen"] is None:
                try:
                    rec["chosen"] = self._route(rec, block)
                except ex.EvaluationError as exc:
                    self._fail(rec, failure(str(exc.message), "expression_error"))
                    return
            if rec["chosen"] is None:
                self._complete(rec, None)
            else:
                self._agenda.append((self._list, key, rec["chosen"], scope, 0))
        elif kind == "try_catch":
            phase = inner.setdefault("phase", "try")
            self._agenda.append((self._list, key, phase, scope, 0))
        elif kind == "loop":
            n = rec["iterations"] or 0
            if n and not self._iteration_done(rec, block, n - 1):  # resume (P-WF-8)
                self._agenda.append((self._list, key, f"iteration:{n - 1}", f"{key}[{n - 1}]/", 0))
            else:
                self._loop_next(rec, block)
        elif kind == "for_each":
            self._start_for_each(rec, block, inner)
        elif kind == "sub_sequence":
            self._start_sub(rec, block)

    def _internal(self, rec: dict[str, Any]) -> dict[str, Any]:
        inner: dict[str, Any] = rec.setdefault("internal", {})
        return inner

    def _route(self, rec: dict[str, Any], block: Block) -> str | None:
        lookup = self._lookup(rec)
        for j, condition in enumerate(block.routes):
            if ex.truthy(condition.evaluate(lookup)):
                return f"route:{j}"
        return "default" if "default" in block.lanes else None

    def _iteration_done(self, rec: dict[str, Any], block: Block, i: int) -> bool:
        last = self._by_key.get(f"{rec['key']}[{i}]/{block.lanes['body'][-1]}")
        return last is not None and last["status"] == "completed"

    def _loop_next(self, rec: dict[str, Any], block: Block) -> None:
        n = rec["iterations"] or 0
        try:
            go = n < block.max_iterations and ex.truthy(
                block.condition.evaluate(self._lookup(rec, loop_next=n))  # type: ignore[union-attr]
            )
        except ex.EvaluationError as exc:
            self._fail(rec, failure(str(exc.message), "expression_error"))
            return
        if not go:  # P-WF-11: the condition is false, or max_iterations ran
            last = self._internal(rec).get("last")
            self._complete(rec, last)
            return
        rec["iterations"] = n + 1
        key = rec["key"]
        self._agenda.append((self._list, key, f"iteration:{n}", f"{key}[{n}]/", 0))

    def _start_for_each(self, rec: dict[str, Any], block: Block, inner: dict[str, Any]) -> None:
        if "items" not in inner:
            try:
                items = block.collection.evaluate(self._lookup(rec))  # type: ignore[union-attr]
            except ex.EvaluationError as exc:
                self._fail(rec, failure(str(exc.message), "expression_error"))
                return
            if not isinstance(items, list):
                self._fail(rec, failure(f"for_each {rec['id']}: the collection is "
                           f"{type(items).__name__}, not an array", "expression_error"))  # fmt: skip
                return
            if len(items) > block.max_iterations:
                self._fail(rec, failure(
                    f"for_each {rec['id']}: {len(items)} items, more than max_iterations "
                    f"{block.max_iterations}", "max_iterations_exceeded",
                    {"items": len(items), "max_iterations": block.max_iterations},
                ))  # fmt: skip
                return
            inner["items"] = items
        n = len(inner["items"])
        rec["iterations"] = n
        inner["done"] = 0
        if n == 0:
            self._complete(rec, [])
            return
        key = rec["key"]
        for i in range(n):  # P-WF-11: every iteration at once
            self._agenda.append((self._list, key, f"iteration:{i}", f"{key}[{i}]/", 0))

    def _start_sub(self, rec: dict[str, Any], block: Block) -> None:
        try:
            value = block.params.render(self._lookup(rec)) if block.params else {}
        except BadReference as exc:
            self._fail(rec, failure(f"reference {exc.path} has no value", BAD_REFERENCE,
                                    {"path": exc.path}))  # fmt: skip
            return
        depth = int(self.state.get("depth", 0)) + 1
        if depth > MAX_SUB_DEPTH:
            self._fail(rec, failure(f"sub-sequences nest deeper than {MAX_SUB_DEPTH} levels",
                                    "nesting_too_deep"))  # fmt: skip
            return
        spec = block.spec
        key = task_key(self.inst["id"], self.state["run"], SUB, rec["key"])
        self.subs.append(SubStart(rec, spec["sequence_name"], spec.get("version"), value, key))

    def _start_leaf(self, rec: dict[str, Any], action: dict[str, Any],
                    params_of: Renderer | None, kind: str, key_of: Renderer | None = None,
                    rate_key_of: Renderer | None = None, error: Any = None) -> None:  # fmt: skip
        rec.update(status="running", started_at=rec["started_at"] or self.now, task_id=None)
        try:
            lookup = self._lookup(rec, error=error)
            params = params_of.render(lookup) if params_of else {}
            for name, of, valid in (("concurrency_key", key_of, _CONCURRENCY_KEY),
                                    ("rate_limit_key", rate_key_of, _RATE_LIMIT_KEY)):  # fmt: skip
                if of is None:
                    continue
                key = of.render(lookup)  # P-KEY-5, P-RATE-5: the step's key, rendered
                if not isinstance(key, str) or not valid.fullmatch(key):
                    self._leaf_failed(rec, failure(
                        f"{name} rendered to {json.dumps(key)[:200]}, not a valid key",
                        BAD_REFERENCE, {name: key},
                    ), fallback_done=kind != STEP)  # fmt: skip
                    return
                action = {**action, name: key}
        except (BadReference, ex.EvaluationError) as exc:  # P-WF-2: a permanent failure
            self._leaf_failed(rec, failure(
                f"reference {exc.path} has no value" if isinstance(exc, BadReference)
                else str(exc.message), BAD_REFERENCE if isinstance(exc, BadReference)
                else "expression_error", {"path": getattr(exc, "path", None)},
            ), fallback_done=kind != STEP)  # fmt: skip
            return
        if action["handler"] == SLEEP:  # P-WF-3: built in, a timer row
            duration = params.get("duration_ms") if isinstance(params, dict) else None
            if not isinstance(duration, int) or isinstance(duration, bool) or duration < 0:
                self._leaf_failed(rec, failure(
                    "sleep needs an integer duration_ms", BAD_REFERENCE, {"duration_ms": duration}
                ), fallback_done=kind != STEP)  # fmt: skip
                return
            self.timers.append(Timer(rec["key"], self.state["run"], self.now + duration))
            return
        key = task_key(self.inst["id"], self.state["run"], kind, rec["key"])
        self.dispatches.append(Dispatch(rec, {**action, "params": params}, key))

    # Lists and containers that end ------------------------------------------------------

    def _lane_done(self, c: dict[str, Any], lane: str, output: Any) -> None:
        block = self.tree.blocks[c["id"]]
        inner, kind = self._internal(c), block.type
        if kind == "parallel":
            inner["done"] = inner.get("done", 0) + 1
            if inner["done"] == len(block.lanes):  # P-WF-3: the join
                scope = scope_of(c)
                self._complete(c, {ids[-1]: self._by_key[scope + ids[-1]]["output"]
                                   for ids in block.lanes.values() if ids})  # fmt: skip
        elif kind == "race":  # P-WF-11: the first branch to complete wins
            c["chosen"] = lane
            self._cancel_below(c)
            self._complete(c, output)
        elif kind == "router":
            self._complete(c, output)
        elif kind == "try_catch":
            if lane == "finally":
                outcome = inner.get("outcome", {})
                if "error" in outcome:
                    self._fail(c, outcome["error"])
                else:
                    self._complete(c, outcome.get("output"))
                return
            inner["outcome"] = {"output": output}
            self._finally_or_end(c, block, inner)
        elif kind == "loop":
            inner["last"] = output
            self._loop_next(c, block)
        elif kind == "for_each":
            inner["done"] = inner.get("done", 0) + 1
            if inner["done"] == c["iterations"]:
                last, key = block.lanes["body"][-1], c["key"]
                self._complete(c, [self._by_key[f"{key}[{i}]/{last}"]["output"]
                                   for i in range(c["iterations"])])  # fmt: skip

    def _finally_or_end(self, c: dict[str, Any], block: Block, inner: dict[str, Any]) -> None:
        if "finally" in block.lanes:
            inner["phase"] = "finally"
            self._agenda.append((self._list, c["key"], "finally", scope_of(c), 0))
        elif "error" in inner["outcome"]:
            self._fail(c, inner["outcome"]["error"])
        else:
            self._complete(c, inner["outcome"].get("output"))

    def _failed(self, rec: dict[str, Any]) -> None:
        """A block failed: its container's rule, or the instance fails (P-WF-6)."""
        if rec is self.state["on_error"]:
            self._finish_failed()
            return
        if rec["group"] is None:
            self._failing(rec["error"])
            return
        c = self._by_key[rec["group"]]
        if c["status"] != "running":
            return
        block, inner, error = self.tree.blocks[c["id"]], self._internal(c), rec["error"]
        if block.type == "race":  # fails only when every branch has failed
            inner["failed"] = inner.get("failed", 0) + 1
            if inner["failed"] == len(block.lanes):
                self._fail(c, error)
        elif block.type == "try_catch":
            if rec["lane"] == "try":  # P-WF-11: the catch runs, the error readable
                inner.update(phase="catch", caught=error)
                self._agenda.append((self._list, c["key"], "catch", scope_of(c), 0))
            elif rec["lane"] == "catch":
                inner["outcome"] = {"error": error}
                self._finally_or_end(c, block, inner)
            else:
                self._fail(c, error)
        else:  # parallel and for_each cancel the rest; router and loop just fail
            self._cancel_below(c)
            self._fail(c, error)

    def _failing(self, error: Any) -> None:
        self.state["failure"] = error
        if self.tree.on_error is None:
            self._finish_failed()
            return
        rec = record(ON_ERROR)
        self.state["on_error"] = rec
        self._start_leaf(rec, self.tree.on_error, self.tree.on_error_params, ON_ERROR_TASK,
                         error=error)  # fmt: skip

    def _finish_failed(self) -> None:
        self.inst.update(status="failed", error=self.state["failure"], finished_at=self.now)

    def _cancel_record(self, rec: dict[str, Any]) -> None:
        if rec["status"] == "running" and rec["task_id"] is not None:
            self.cancels.append(rec["task_id"])  # P-WF-7: as cancelTask does
        if rec["status"] == "running" and rec["child_instance_id"] is not None:
            self.sub_cancels.append(rec["child_instance_id"])
        rec.update(status="cancelled", finished_at=self.now)

    def _cancel_below(self, c: dict[str, Any]) -> None:
        stack = list(self._children.get(c["key"], []))
        while stack:
            rec = stack.pop()
            if rec["status"] == "running":
                self._cancel_record(rec)
            stack.extend(self._children.get(rec["key"], []))

    # Outcomes from outside ----------------------------------------------------------------

    def on_task(self, task: Row) -> bool:
        """A step's task reached a final state (P-WF-5); False if it is not current."""
        if not self._running():
            return False
        if self._by_task is None:  # built once: a batch of 100 ends hits one machine
            self._by_task = {r["task_id"]: r for r in self.state["steps"] if r["task_id"]}
            on_error = self.state["on_error"]
            if on_error is not None and on_error["task_id"]:
                self._by_task[on_error["task_id"]] = on_error
        rec = self._by_task.get(task["id"])
        if rec is None or rec["status"] != "running" or rec["task_id"] != task["id"]:
            return False
        self._touch()
        rec["attempts"] += int(task["attempt"])
        if task["status"] == "completed":
            self._complete(rec, task["output"])
        else:
            error = task.get("error") or failure(f"task {task['status']}", task["status"])
            self._leaf_failed(rec, error, fallback_done=rec["fallback"])
        self._drain()
        return True

    def on_timer(self, key: str, run: int) -> bool:
        """A sleep's timer fired."""
        if not self._running() or run != self.state["run"]:
            return False
        on_error = self.state["on_error"]
        rec = on_error if key == ON_ERROR and on_error is not None else self._by_key.get(key)
        if rec is None or rec["status"] != "running" or rec["task_id"] is not None:
            return False
        self._touch()
        self._complete(rec, None)
        self._drain()
        return True

    def on_child(self, key: str, run: int, child: Row | None) -> bool:
        """A sub_sequence's child instance ended (P-WF-13)."""
        rec = self._by_key.get(key)
        if (not self._running() or run != self.state["run"] or rec is None
                or rec["status"] != "running" or child is None
                or child["status"] not in FINAL):  # fmt: skip
            return False
        self._touch()
        if child["status"] == "completed":
            self._complete(rec, child["output"])
        else:
            self._fail(rec, child["error"] or failure("child instance cancelled", "cancelled"))
        self._drain()
        return True

    def child_failed(self, rec: dict[str, Any], error: Any) -> None:
        """The child instance could not start (unknown sequence)."""
        self._fail(rec, error)
        self._drain()

    def _leaf_failed(self, rec: dict[str, Any], error: Any, fallback_done: bool) -> None:
        """P-WF-6: the step's fallback first, then the block fails."""
        if rec is self.state["on_error"]:
            self._fail(rec, error)
            return
        block = self.tree.blocks[rec["id"]]
        if "fallback" in block.spec and not fallback_done:
            rec.update(fallback=True, error=error)
            self._start_leaf(rec, block.spec["fallback"], block.fallback_params, FALLBACK,
                             error=error)  # fmt: skip
            return
        self._fail(rec, error)

    # Operator actions -----------------------------------------------------------------

    def cancel(self) -> None:
        """P-WF-7: the instance and its running blocks' tasks and children become cancelled."""
        self._touch()
        for rec in [*self.state["steps"], self.state["on_error"] or {}]:
            if rec.get("status") == "running":
                self._cancel_record(rec)
        self.inst.update(status="cancelled", finished_at=self.now)

    def retry(self, start: bool = True) -> None:
        """P-WF-8: a failed instance resumes from the failed block; outputs stay. Without
        `start` it is only made ready to resume: it waits for a slot of its concurrency
        key (P-KEY-7) and `start` resumes it."""
        self._touch()
        state = self.state
        state["run"] += 1
        state.update(on_error=None, failure=None)
        for rec in self._children.get(None, []):
            if rec["status"] in ("failed", "cancelled"):
                self._reset(rec)
        self.inst.update(status="running", error=None, finished_at=None)
        if start:
            self.start()

    def _reset(self, rec: dict[str, Any]) -> None:
        """The failed block and what did not complete inside it run again."""
        rec.update(status="pending", output=None, error=None, finished_at=None,
                   task_id=None, fallback=False)  # fmt: skip
        inner = rec.get("internal", {})
        phase = inner.get("phase")
        if phase == "catch":
            inner.pop("outcome", None)
        keep = {"catch": ("try",), "finally": ("try", "catch")}.get(phase or "", ())
        if rec["type"] == "sub_sequence":
            rec["child_instance_id"] = None
        for child in self._children.get(rec["key"], []):
            if child["status"] != "completed" and (child["lane"] or "") not in keep:
                self._reset(child)

    # Template values (P-WF-12) ------------------------------------------------------------

    def _lookup(
        self, rec: dict[str, Any], *, error: Any = None, loop_next: int | None = None
    ) -> Callable[[tuple[Any, ...]], Any]:
        return Scope(self, rec, error, loop_next).lookup

    def find(self, block_id: str, scope: str) -> dict[str, Any] | None:
        """The record of `block_id` as seen from `scope`: the innermost iteration first."""
        while True:
            rec = self._by_key.get(scope + block_id)
            if rec is not None or not scope:
                return rec
            scope = scope[: scope.rstrip("/").rfind("/") + 1]

    def record_at(self, key: str) -> dict[str, Any] | None:
        return self._by_key.get(key)
