"""End-state checks: read back through the API and compare with a scenario's `expect`.

Each function returns human-readable reasons; an empty list means the check passed.
"""

from __future__ import annotations

import datetime
import json
import time
from typing import TYPE_CHECKING, Any

from . import checks_keys, checks_logs, checks_queues, checks_rate, checks_stats, checks_workflows
from . import checks_sdk as sdk_checks
from .api import ApiError

if TYPE_CHECKING:
    from .run import ScenarioRun

# An SDK may free a slot when a handler returns, a moment before the server has ended the
# attempt (the result is still in flight): such an attempt does not count as held.
RESULT_IN_FLIGHT_MS = 250
# Server timestamps have millisecond resolution: a claim made by the very poll being checked
# can carry a stamp just before the proxy logged that poll. Such an attempt is not held yet.
CLAIM_STAMP_MS = 5


def ms(stamp: str | None) -> float | None:
    if stamp is None:
        return None
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000


def short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def as_set(value) -> list:
    return value if isinstance(value, list) else [value]


def group_attempts(run: ScenarioRun, group: str, check: str) -> tuple[dict[str, list[dict]], list[str]]:
    """Task ref -> its attempts, for each task of `group`; or nothing and the failure line of
    the check named `check` when the group is unknown or an attempt history cannot be read."""
    if group not in run.groups:
        return {}, [f"{check}: unknown task group {group!r}"]
    found = {}
    for ref in run.groups[group]:
        try:
            found[ref] = run.api.attempts(run.task_id(ref))
        except ApiError as err:
            return {}, [f"{check}: cannot read the attempts of {ref} back: {err}"]
    return found, []


def converge(run: ScenarioRun, deadline: float) -> None:
    """Wait (up to the deadline) until expected task statuses and worker exits are reached."""
    expect = run.scenario["expect"]
    statuses = {
        ref: exp["status"]
        for key, exp in expect.get("tasks", {}).items()
        if "status" in exp
        for ref in run.groups.get(key, [key])
    }
    exits = [
        name
        for name, exp in expect.get("workers", {}).items()
        if exp.get("running") is False or "exit_code" in exp or "refused" in exp
    ]
    while time.time() * 1000 < deadline:
        if (
            all(run.status(ref) in as_set(want) for ref, want in statuses.items())
            and all(name in run.workers and run.workers[name].exited_at is not None for name in exits)
            and checks_workflows.converged(run)
        ):
            return
        time.sleep(0.1)


def end_state(run: ScenarioRun) -> list[str]:
    expect = run.scenario["expect"]
    reasons = tasks(run, expect.get("tasks", {}))
    if "order" in expect:
        reasons += order(run, expect["order"])
    attempts = all_attempts(run) if "max_concurrent" in expect else {}
    for name, bounds in expect.get("max_concurrent", {}).items():
        reasons += max_concurrent(run, name, bounds, attempts)
    for name, concurrency in expect.get("batch_polls_within_free_slots", {}).items():
        reasons += batch_polls(run, name, concurrency)
    for name, bounds in expect.get("max_running", {}).items():
        reasons += max_running(run, name, bounds)
    for name, exp in expect.get("workers", {}).items():
        reasons += worker(run, name, exp)
    reasons += sdk_checks.end_state(run, expect)
    reasons += checks_queues.end_state(run, expect)
    reasons += checks_keys.end_state(run, expect)
    reasons += checks_rate.end_state(run, expect)
    reasons += checks_logs.end_state(run, expect)
    reasons += checks_workflows.end_state(run)
    for name in expect.get("observability", []):
        reasons += checks_stats.observability(run, name)
    if "trace_context" in expect:
        from .checks_trace import trace_context  # it imports this module's helpers

        reasons += trace_context(run, expect["trace_context"])
    return reasons


def tasks(run: ScenarioRun, expectations: dict) -> list[str]:
    reasons = []
    for key, exp in expectations.items():
        for ref in run.groups.get(key, [key]):
            reasons += [f"{ref}: {r}" for r in task(run, ref, exp)]
    return reasons


def task(run: ScenarioRun, ref: str, exp: dict) -> list[str]:
    task_id = run.task_id(ref)
    try:
        record = run.api.task(task_id)
        attempts = run.api.attempts(task_id)
    except ApiError as err:
        return [f"cannot read it back: {err}"]
    error = record.get("error") or {}
    history = (
        ", ".join(
            f"#{a['attempt']} {a['outcome']}" + (f" ({a['error']['code']})" if a.get("error") else "") for a in attempts
        )
        or "no attempts"
    )
    where = f" [status {record['status']}, attempts: {history}]"
    out = []
    if "status" in exp and record["status"] not in as_set(exp["status"]):
        out.append(f"status is {record['status']!r}, expected {exp['status']!r}" + where)
    if "attempt" in exp and record["attempt"] != exp["attempt"]:
        out.append(f"attempt is {record['attempt']}, expected {exp['attempt']}" + where)
    if "output" in exp and not contains(record.get("output"), exp["output"]):
        out.append(f"output is {short(record.get('output'))}, expected it to contain {short(exp['output'])}")
    echo = (record.get("output") or {}).get("echo") if isinstance(record.get("output"), dict) else None
    if exp.get("output_echoes_params") and echo != record["params"]:
        out.append(f"output.echo is {short(echo)}, expected the params {short(record['params'])}")
    if "error_code" in exp and error.get("code") != exp["error_code"]:
        out.append(f"error code is {error.get('code')!r}, expected {exp['error_code']!r} (error: {short(error)})")
    if "error_retryable" in exp and error.get("retryable") != exp["error_retryable"]:
        out.append(f"error.retryable is {error.get('retryable')!r}, expected {exp['error_retryable']!r}")
    details = error.get("details")
    if "error_details" in exp and not contains(details, exp["error_details"]):
        out.append(f"error.details is {short(details)}, expected it to contain {short(exp['error_details'])}")
    message = str(error.get("message") or "")
    for text in exp.get("error_message_contains", []):
        if text not in message:
            out.append(f"error.message {short(message[-200:])} does not contain {text!r}")
    if "error_message_max_bytes" in exp and len(message.encode()) > exp["error_message_max_bytes"]:
        out.append(f"error.message is {len(message.encode())} bytes, expected at most {exp['error_message_max_bytes']}")
    if "error_details_keys" in exp and sorted(details or {}) != sorted(exp["error_details_keys"]):
        out.append(
            f"error.details has keys {sorted(details or {})}, expected exactly {sorted(exp['error_details_keys'])}"
        )
    if "attempt_outcomes" in exp:
        got = [a["outcome"] for a in attempts]
        want = exp["attempt_outcomes"]
        if len(got) != len(want) or any(g not in as_set(w) for g, w in zip(got, want, strict=False)):
            out.append(f"attempt outcomes are {got}, expected {want}" + where)
    if "attempt_error_codes" in exp:
        got = [(a.get("error") or {}).get("code") for a in attempts]
        if got != exp["attempt_error_codes"]:
            out.append(f"attempt error codes are {got}, expected {exp['attempt_error_codes']}")
    if "completed_by" in exp:
        want = run.worker(exp["completed_by"]).worker_id
        done = [a.get("worker_id") for a in attempts if a["outcome"] == "completed"]
        if done != [want]:
            out.append(f"completed by {done or 'nobody'}, expected {want}" + where)
    if "retry_gap_ms" in exp:
        out += retry_gap(attempts, exp["retry_gap_ms"])
    if "results_sent" in exp:
        out += sdk_checks.results_sent(run, task_id, exp["results_sent"])
    if "handler_runs" in exp:
        runs = len(run.events("start", ref))
        if runs != exp["handler_runs"]:
            out.append(f"handler ran {runs} times (adapter `start` events), expected {exp['handler_runs']}")
    return out


def contains(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and all(k in actual and contains(actual[k], v) for k, v in wanted.items())
    return actual == wanted


def retry_gap(attempts: list[dict], bounds: dict) -> list[str]:
    if len(attempts) < 2 or attempts[0].get("ended_at") is None:
        return [f"needs two attempts to measure the retry gap, has {len(attempts)}"]
    gap = ms(attempts[1]["started_at"]) - ms(attempts[0]["ended_at"])
    if gap < bounds.get("min", 0) or gap > bounds.get("max", float("inf")):
        return [f"attempt 2 started {gap:.0f} ms after attempt 1 ended, expected {bounds}"]
    return []


def order(run: ScenarioRun, refs: list[str]) -> list[str]:
    started = {}
    for ref in refs:
        attempts = run.api.attempts(run.task_id(ref))
        if not attempts:
            return [f"order: {ref} was never claimed"]
        started[ref] = ms(attempts[0]["started_at"])
    got = sorted(refs, key=lambda r: started[r])
    return [] if got == refs else [f"claim order was {got}, expected {refs}"]


def all_attempts(run: ScenarioRun) -> dict[str, list[tuple[float, float]]]:
    """worker id -> (claimed, ended) of every attempt of every task of the run."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for task_id in run.ids.values():
        for a in run.api.attempts(task_id):
            end = ms(a.get("ended_at")) or float("inf")
            spans.setdefault(a.get("worker_id") or "", []).append((ms(a["started_at"]), end))
    return spans


def max_concurrent(run: ScenarioRun, name: str, bounds: dict, attempts: dict) -> list[str]:
    spans = attempts.get(run.worker(name).worker_id, [])
    points = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda p: (p[0], p[1]))
    held = peak = 0
    for _, delta in points:
        held += delta
        peak = max(peak, held)
    if peak > bounds.get("max", peak) or peak < bounds.get("min", peak):
        return [f"{name} held {peak} tasks at once on the server (attempt spans), expected {bounds}"]
    return []


def max_running(run: ScenarioRun, name: str, bounds: dict) -> list[str]:
    """P-SDK-3: the most handlers the worker ran at once, from its adapter's `start` and `end`
    events (emitted in order by one process). Unlike `max_concurrent`, a task whose result is
    being reported no longer counts: its slot is free once the completion is handed over."""
    running = peak = 0
    for e in list(run.worker(name).events):
        kind = e.get("event")
        running += 1 if kind == "start" else -1 if kind == "end" else 0
        peak = max(peak, running)
    if peak > bounds.get("max", peak) or peak < bounds.get("min", peak):
        return [f"{name} ran {peak} handlers at once (adapter start/end events), expected {bounds}"]
    return []


def handler_spans(run: ScenarioRun, name: str) -> list[tuple[float, float]]:
    """(start, end) of each handler run of the worker, as its adapter's events arrived."""
    starts: dict[object, float] = {}
    spans = []
    for e in list(run.worker(name).events):
        if e.get("event") == "start":
            starts[e.get("task_id")] = e["_recv"]
        elif e.get("event") == "end" and e.get("task_id") in starts:
            spans.append((starts.pop(e.get("task_id")), e["_recv"]))
    return spans + [(s, float("inf")) for s in starts.values()]


def batch_polls(run: ScenarioRun, name: str, concurrency: int) -> list[str]:
    """P-SDK-3: a slot is taken while its handler runs (a completion handed over frees it;
    the cap on those is checked by `max_concurrent`), so a poll asks for at most the slots
    no running handler takes."""
    proc = run.worker(name)
    spans = handler_spans(run, name)
    polls = [
        r
        for r in run.proxy.requests
        if r["path"].startswith("/workers/tasks/poll")
        and (r.get("body") or {}).get("worker_id") == proc.worker_id
        and r["fault"] == "none"
    ]
    if not polls:
        return [f"{name} sent no poll with its worker_id through the proxy"]
    out = []
    for r in polls:
        size = (r.get("body") or {}).get("batch_size", 10) if r["path"].endswith("/batch") else 1
        held = sum(1 for s, e in spans if s < r["t"] - CLAIM_STAMP_MS and e > r["t"] + RESULT_IN_FLIGHT_MS)
        if not 1 <= size <= concurrency - held:
            out.append(f"{name} polled for {size} while {held} of its {concurrency} handlers ran (P-SDK-3)")
    return out[:3]


def worker(run: ScenarioRun, name: str, exp: dict) -> list[str]:
    proc = run.worker(name)
    if "refused" in exp:  # P-SDK-23: it never ran, so nothing else applies
        return checks_queues.refused(run, name, exp["refused"])
    out = []
    if "running" in exp and (proc.exited_at is None) != exp["running"]:
        out.append(
            f"{name} is {'running' if proc.exited_at is None else 'exited'}, expected "
            f"{'running' if exp['running'] else 'exited'}"
        )
    if "exit_code" in exp and proc.exit_code != exp["exit_code"]:
        state = "still running" if proc.exited_at is None else f"exit code {proc.exit_code}"
        out.append(f"{name}: {state}, expected exit code {exp['exit_code']}; stderr: {proc.stderr_tail(3)!r}")
    if "exit_within_ms" in exp and proc.exited_at is None:
        out.append(f"{name} is still running, expected it to exit within {exp['exit_within_ms']} ms")
    elif "exit_within_ms" in exp and proc.last_command_at is not None:
        took = proc.exited_at - proc.last_command_at
        if took > exp["exit_within_ms"]:
            out.append(
                f"{name} exited {took:.0f} ms after the last signal/directive, expected <= {exp['exit_within_ms']}"
            )
    if "registered" in exp:
        out += registered(run, name, proc.worker_id, exp["registered"])
    if "registration" in exp:
        out += sdk_checks.registration(run, name, exp["registration"])
    if exp.get("default_worker_id"):
        out += sdk_checks.default_worker_id(run, name)
    for ref in exp.get("cancelled_seen", []):
        if not run.events("cancelled", ref, worker=name):
            out.append(f"{name}: the handler of {ref} never reported its cancellation signal")
    return out


def registered(run: ScenarioRun, name: str, worker_id: str, wanted: bool) -> list[str]:
    """Registered means a live record (not `dead` nor `deregistered`); a 404 means deregistered."""
    try:
        record = run.api.worker(worker_id)
    except ApiError as err:
        return [f"{name}: cannot read the worker record: {err}"]
    live = record is not None and record.get("state") not in ("dead", "deregistered")
    if live == wanted:
        return []
    state = "404" if record is None else f"state {record.get('state')!r}"
    return [f"{name}: GET /workers/{{id}} gives {state}, expected {'a live worker' if wanted else 'deregistered'}"]
