"""Workflows (issue 16, docs/protocol.md section 16): sequences, instances and their checks.

The runner defines a scenario's `sequences` and starts its `instances` over raw HTTP before
the first worker starts; the adapters run the step tasks as plain tasks (the worker protocol
is unchanged, P-WF-4). `expect.instances` is checked through `GET /instances/{id}` and the
adapters' outputs and requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .api import ApiError

if TYPE_CHECKING:
    from .run import ScenarioRun

FINAL = ("completed", "failed", "cancelled")


def define(run: ScenarioRun, sequences: list[dict]) -> list[str]:
    """POST /sequences for each definition (P-WF-1); returns the failures."""
    out = []
    for seq in sequences:
        try:
            run.api.call("POST", "/sequences", seq)
        except ApiError as err:
            out.append(f"define sequence {seq.get('name')!r}: {err}")
    return out


def start(run: ScenarioRun, specs: list[dict]) -> list[str]:
    """POST /instances for each `{ref, sequence, input?}` (P-WF-4); remembers ref -> id."""
    out = []
    for spec in specs:
        body = {k: spec[k] for k in ("sequence", "version", "input") if k in spec}
        try:
            run.instances[spec["ref"]] = run.api.call("POST", "/instances", body)["id"]
        except ApiError as err:
            out.append(f"start instance {spec['ref']}: {err}")
    return out


def instance(run: ScenarioRun, ref: str) -> dict | None:
    try:
        return run.api.call("GET", f"/instances/{run.instances[ref]}")
    except (ApiError, KeyError):
        return None


def step_task_id(run: ScenarioRun, ref: str, step_id: str) -> str | None:
    found = instance(run, ref)
    for step in (found or {}).get("steps", []):
        if step["id"] == step_id:
            return step.get("task_id")
    return None


def step_started(run: ScenarioRun, want: dict) -> bool:
    """Condition: the handler of an instance's step has started on some worker."""
    task_id = step_task_id(run, want["instance"], want["step"])
    return bool(task_id) and any(
        e.get("event") == "start" and e.get("task_id") == task_id for w in list(run.workers.values()) for e in w.events
    )


def converged(run: ScenarioRun) -> bool:
    """Expected instance statuses reached, and every expected waitInstance has answered."""
    for ref, exp in run.scenario["expect"].get("instances", {}).items():
        if "status" in exp and (instance(run, ref) or {}).get("status") != exp["status"]:
            return False
        for key in ("waited_by", "wait_timeout_by"):
            if key in exp and not wait_answers(run, exp[key], run.instances.get(ref)):
                return False
    return True


def wait_answers(run: ScenarioRun, worker: str, instance_id: str | None) -> list[dict]:
    if worker not in run.workers:
        return []
    kinds = ("waited", "wait_timeout", "wait_error")
    return [
        e for e in list(run.workers[worker].events) if e.get("event") in kinds and e.get("instance_id") == instance_id
    ]


def contains(actual, expected) -> bool:
    """`expected` is a subset of `actual` (maps recursively; anything else equal)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and contains(actual[k], v) for k, v in expected.items())
    return actual == expected


def end_state(run: ScenarioRun) -> list[str]:
    out = []
    for ref, exp in run.scenario["expect"].get("instances", {}).items():
        out += check_instance(run, ref, exp)
    return out


def check_instance(run: ScenarioRun, ref: str, exp: dict) -> list[str]:
    found = instance(run, ref)
    if found is None:
        return [f"instance {ref}: never started or GET /instances/{{id}} failed"]
    out = []
    if "status" in exp and found["status"] != exp["status"]:
        steps = ", ".join(f"{s['id']}={s['status']}" for s in found.get("steps", []))
        out.append(f"instance {ref}: status {found['status']!r}, expected {exp['status']!r} (steps: {steps})")
    if "output" in exp and not contains(found.get("output"), exp["output"]):
        got = short(found.get("output"))
        out.append(f"instance {ref}: output {got}, expected it to contain {short(exp['output'])}")
    if "error_code" in exp and (found.get("error") or {}).get("code") != exp["error_code"]:
        out.append(f"instance {ref}: error {short(found.get('error'))}, expected code {exp['error_code']!r}")
    if "on_error" in exp and not contains(found.get("on_error"), exp["on_error"]):
        out.append(f"instance {ref}: on_error {short(found.get('on_error'))}, expected {short(exp['on_error'])}")
    steps = {s["id"]: s for s in found.get("steps", [])}
    for step_id, want in exp.get("steps", {}).items():
        got = steps.get(step_id)
        if got is None:
            out.append(f"instance {ref}: no step {step_id!r}")
        elif not contains(got, want):
            out.append(f"instance {ref} step {step_id}: {short(got)}, expected it to contain {short(want)}")
    for step_id in exp.get("worker_saw_context", []):  # P-WF-4: the handler got {instance_id, step_id}
        out += saw_context(run, ref, found, step_id)
    if "waited_by" in exp:
        out += waited(run, ref, found, exp["waited_by"])
    if "wait_timeout_by" in exp:
        out += wait_timed_out(run, ref, found, exp["wait_timeout_by"])
    for step_id in exp.get("cancelled_seen", []):  # P-WF-7, P-SDK-5: the handler's signal fired
        task_id = step_task(found, step_id)
        if not any(e.get("task_id") == task_id for e in run.events("cancelled")):
            out.append(f"instance {ref} step {step_id}: its handler never reported its cancellation signal")
    for step_id in exp.get("no_result_sent", []):  # P-WF-7, P-SDK-5: a cancelled step reports nothing
        out += no_result(run, ref, found, step_id)
    return out


def waited(run: ScenarioRun, ref: str, found: dict, worker: str) -> list[str]:
    """P-SDK-25: the adapter's waitInstance returned the final state, not before it was final."""
    who = f"instance {ref}: {worker}'s waitInstance"
    events = [e for e in run.events("waited", worker=worker) if e.get("instance_id") == found["id"]]
    if not events:
        other = run.events("wait_timeout", worker=worker) + run.events("wait_error", worker=worker)
        return [f"{who} never returned it (saw {short(other[:2]) if other else 'nothing'})"]
    got = events[0]
    out = []
    if got.get("status") != found["status"] or found["status"] not in FINAL:
        out.append(f"{who} returned status {got.get('status')!r}, final is {found['status']!r}")
    finished = ms(found.get("finished_at"))
    if finished is not None and got["t"] < finished - 50:  # the adapter's clock is the runner's
        out.append(f"{who} returned {finished - got['t']:.0f} ms before it was final")
    return out


def wait_timed_out(run: ScenarioRun, ref: str, found: dict, worker: str) -> list[str]:
    """P-SDK-25: the timeout passed first: WaitTimeoutError carrying the last state seen."""
    who = f"instance {ref}: {worker}'s waitInstance"
    events = [e for e in run.events("wait_timeout", worker=worker) if e.get("instance_id") == found["id"]]
    if not events:
        other = run.events("waited", worker=worker) + run.events("wait_error", worker=worker)
        return [f"{who} did not time out (saw {short(other[:2]) if other else 'nothing'})"]
    last = events[0].get("last_status")
    if last != found["status"]:
        return [f"{who} timed out with last status {last!r}, expected {found['status']!r}"]
    return []


def ms(stamp: str | None) -> float | None:
    from .checks import ms as _ms

    return _ms(stamp)


def step_task(found: dict, step_id: str) -> str | None:
    if step_id == "on_error":
        return (found.get("on_error") or {}).get("task_id")
    return next((s.get("task_id") for s in found.get("steps", []) if s["id"] == step_id), None)


def saw_context(run: ScenarioRun, ref: str, found: dict, step_id: str) -> list[str]:
    task_id = step_task(found, step_id)
    if not task_id:
        return [f"instance {ref} step {step_id}: no task was dispatched"]
    try:
        output = run.api.task(task_id).get("output") or {}
    except ApiError as err:
        return [f"instance {ref} step {step_id}: {err}"]
    want = {"instance_id": found["id"], "step_id": step_id}
    if not isinstance(output, dict) or output.get("context") != want:
        seen = output.get("context") if isinstance(output, dict) else output
        return [f"instance {ref} step {step_id}: the handler saw context {short(seen)}, expected {short(want)}"]
    return []


def no_result(run: ScenarioRun, ref: str, found: dict, step_id: str) -> list[str]:
    task_id = step_task(found, step_id)
    if not task_id:
        return [f"instance {ref} step {step_id}: no task was dispatched"]
    sent = [
        r["path"]
        for r in list(run.proxy.requests)
        if task_id in (r.get("task_ids") or []) and ("complete" in r["path"] or "fail" in r["path"])
    ]
    if sent:
        return [f"instance {ref} step {step_id}: the worker sent a result for its cancelled task ({', '.join(sent)})"]
    return []


def short(value, limit: int = 200) -> str:
    from .checks import short as _short

    return _short(value, limit)
