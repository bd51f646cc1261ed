"""Workflows (issues 16 and 31, docs/protocol.md section 16): sequences, instances and their checks.

The runner defines a scenario's `sequences` and starts its `instances` over raw HTTP before
the first worker starts; the adapters run the step tasks as plain tasks (the worker protocol
is unchanged, P-WF-4). `expect.instances` is checked through `GET /instances/{id}` and the
adapters' outputs and requests. Step runs are named by their StepRun `key` (the block id,
or `<loop key>[<i>]/<id>` inside an iteration: one block id runs many times there).
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
        fields = ("sequence", "version", "input", "context", "concurrency_key", "max_concurrency")
        body = {k: spec[k] for k in fields if k in spec}
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


def run_key(step: dict) -> str:
    """A StepRun's key; a server without block runs (issue 16) names a step by its id."""
    return step.get("key") or step["id"]


def step_runs(found: dict | None) -> dict[str, dict]:
    return {run_key(s): s for s in (found or {}).get("steps", [])}


def step_started(run: ScenarioRun, want: dict) -> bool:
    """Condition: the handler of an instance's step has started on some worker."""
    task_id = step_task(instance(run, want["instance"]) or {}, want["step"])
    return bool(task_id) and any(
        e.get("event") == "start" and e.get("task_id") == task_id for w in list(run.workers.values()) for e in w.events
    )


def status_is(run: ScenarioRun, wanted: dict) -> bool:
    """Condition `instance_status`: each instance ref's status is (one of) the wanted."""
    for ref, want in wanted.items():
        if (instance(run, ref) or {}).get("status") not in (want if isinstance(want, list) else [want]):
            return False
    return True


def late_result(run: ScenarioRun, step: dict, what: str) -> list[str]:
    """A result for a step's task that must be refused (a race loser's, P-WF-7's cancelled
    step), sent as its worker would have with the lease of its last attempt; the instance's
    expectations are checked after it."""
    found = instance(run, step["instance"])
    task_id = step_task(found or {}, step["step"])
    if not task_id:
        return [f"{what}: instance {step['instance']} has no task for step {step['step']!r}"]
    want = step["answer"]
    try:
        lease_id = run.api.attempts(task_id)[-1]["lease_id"]
        body = {"lease_id": lease_id, "output": step.get("output", {"late": True})}
        run.api.call("POST", f"/workers/tasks/{task_id}/complete", body)
    except IndexError:
        return [f"{what}: step {step['step']!r}'s task was never claimed"]
    except ApiError as err:
        code = err.body.get("code") if isinstance(err.body, dict) else None
        if err.status == want["status"] and want.get("code", code) == code:
            return []
        expected = f"{want['status']} {want.get('code')!r}"
        return [f"{what}: the late result got HTTP {err.status} {code!r}, expected {expected}"]
    return [f"{what}: the late result for step {step['step']!r} was accepted, expected {want['status']}"]


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
    """`expected` is a subset of `actual`: maps recursively, lists item by item and of the same
    length (a for_each output in item order), anything else equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and contains(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(contains(a, e) for a, e in zip(actual, expected, strict=True))
        )
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
    if "waiting" in exp and not contains(found.get("waiting"), exp["waiting"]):  # P-KEY-7
        out.append(f"instance {ref}: waiting {short(found.get('waiting'))}, expected {short(exp['waiting'])}")
    steps = step_runs(found)
    for step_key, want in exp.get("steps", {}).items():
        got = steps.get(step_key)
        if got is None:
            out.append(f"instance {ref}: no step {step_key!r} (keys: {', '.join(steps)})")
        elif not contains(got, want):
            out.append(f"instance {ref} step {step_key}: {short(got)}, expected it to contain {short(want)}")
    out += [f"instance {ref}: step {k!r} ran: {short(steps[k])}" for k in exp.get("not_run", []) if ran(steps.get(k))]
    if "finish_order" in exp:
        out += finish_order(ref, steps, exp["finish_order"])
    for step_key, want in exp.get("child_instances", {}).items():
        out += child_instance(run, ref, steps.get(step_key), step_key, want)
    for step_key in exp.get("worker_saw_context", []):  # P-WF-4: the handler got {instance_id, step_id}
        out += saw_context(run, ref, found, step_key)
    if "waited_by" in exp:
        out += waited(run, ref, found, exp["waited_by"])
    if "wait_timeout_by" in exp:
        out += wait_timed_out(run, ref, found, exp["wait_timeout_by"])
    for step_key in exp.get("cancelled_seen", []):  # P-WF-7, P-SDK-5: the handler's signal fired
        task_id = step_task(found, step_key)
        if not any(e.get("task_id") == task_id for e in run.events("cancelled")):
            out.append(f"instance {ref} step {step_key}: its handler never reported its cancellation signal")
    for step_key in exp.get("no_result_sent", []):  # P-WF-7, P-SDK-5: a cancelled step reports nothing
        out += no_result(run, ref, found, step_key)
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


def ran(step: dict | None) -> bool:
    """A block that never ran is absent from `steps`, or listed `pending` and never started."""
    return step is not None and (step.get("status") != "pending" or step.get("started_at") is not None)


def finish_order(ref: str, steps: dict[str, dict], keys: list[str]) -> list[str]:
    """The steps finished in this order (e.g. for_each iterations finishing last to first,
    while the block's output stays in item order)."""
    ended = [(ms(steps.get(k, {}).get("finished_at")), k) for k in keys]
    if any(t is None for t, _ in ended):
        return [f"instance {ref}: not all of {keys} finished: {short({k: steps.get(k) for k in keys})}"]
    got = [k for _, k in sorted(ended)]
    return [] if got == keys else [f"instance {ref}: steps finished in the order {got}, expected {keys}"]


def child_instance(run: ScenarioRun, ref: str, step: dict | None, step_key: str, want: dict) -> list[str]:
    child_id = (step or {}).get("child_instance_id")
    if not child_id:
        return [f"instance {ref} step {step_key}: no child_instance_id ({short(step)})"]
    try:
        child = run.api.call("GET", f"/instances/{child_id}")
    except ApiError as err:
        return [f"instance {ref} step {step_key}: child {child_id}: {err}"]
    if not contains(child, want):
        return [f"instance {ref} step {step_key}: child instance {short(child)}, expected it to contain {short(want)}"]
    return []


def ms(stamp: str | None) -> float | None:
    from .checks import ms as _ms

    return _ms(stamp)


def step_task(found: dict, step_key: str) -> str | None:
    if step_key == "on_error":
        return (found.get("on_error") or {}).get("task_id")
    return (step_runs(found).get(step_key) or {}).get("task_id")


def saw_context(run: ScenarioRun, ref: str, found: dict, step_key: str) -> list[str]:
    task_id = step_task(found, step_key)
    if not task_id:
        return [f"instance {ref} step {step_key}: no task was dispatched"]
    try:
        output = run.api.task(task_id).get("output") or {}
    except ApiError as err:
        return [f"instance {ref} step {step_key}: {err}"]
    step_id = (step_runs(found).get(step_key) or {}).get("id", step_key)
    want = {"instance_id": found["id"], "step_id": step_id}
    if step_key != step_id:  # a run inside a loop or for_each: which iteration it is
        want["step_key"] = step_key
    if not isinstance(output, dict) or output.get("context") != want:
        seen = output.get("context") if isinstance(output, dict) else output
        return [f"instance {ref} step {step_key}: the handler saw context {short(seen)}, expected {short(want)}"]
    return []


def no_result(run: ScenarioRun, ref: str, found: dict, step_key: str) -> list[str]:
    task_id = step_task(found, step_key)
    if not task_id:
        return [f"instance {ref} step {step_key}: no task was dispatched"]
    sent = [
        r["path"]
        for r in list(run.proxy.requests)
        if task_id in (r.get("task_ids") or []) and ("complete" in r["path"] or "fail" in r["path"])
    ]
    if sent:
        return [f"instance {ref} step {step_key}: the worker sent a result for its cancelled task ({', '.join(sent)})"]
    return []


def short(value, limit: int = 200) -> str:
    from .checks import short as _short

    return _short(value, limit)
