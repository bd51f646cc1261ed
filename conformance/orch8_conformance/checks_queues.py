"""Checks of issue 20's queue rules: multi-queue order and weights, label routing as GET
/queues shows it, and worker options refused before any request.

Each function returns human-readable reasons; an empty list means the check passed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .api import ApiError

if TYPE_CHECKING:
    from .run import ScenarioRun

# Server stamps and the runner's clock are the same host's, in ms; a claim within this much
# of an enqueue's acknowledgement may have raced it.
RACE_MS = 20


def end_state(run: ScenarioRun, expect: dict) -> list[str]:
    """The expect-level checks of this module, in a fixed order."""
    out = []
    if "queue_order" in expect:
        out += queue_order(run, expect["queue_order"])
    if "queue_share" in expect:
        out += queue_share(run, expect["queue_share"])
    for row in expect.get("queue_stats", []):
        out += queue_stats(run, row)
    if expect.get("no_requests") and run.proxy.requests:
        first = run.proxy.requests[0]
        out.append(
            f"{len(run.proxy.requests)} requests went through the proxy (first: {first['method']} {first['path']}), "
            "expected none: invalid worker options are refused before any request (P-SDK-23)"
        )
    return out


def first_claims(run: ScenarioRun) -> list[tuple[str, str, float | None]]:
    """(ref, queue name, first attempt's start in epoch ms or None) of every task of the run."""
    from .checks import ms  # checks imports this module

    rows = []
    for ref, task_id in run.ids.items():
        queue = run.api.task(task_id)["queue_name"]
        attempts = run.api.attempts(task_id)
        rows.append((ref, queue, ms(attempts[0]["started_at"]) if attempts else None))
    return rows


def queue_order(run: ScenarioRun, queues: list[str]) -> list[str]:
    """P-QUEUE-2: no task of a later queue is claimed while a task of an earlier queue of the
    list was claimable (enqueued and acknowledged) and still unclaimed."""
    rank = {q: i for i, q in enumerate(queues)}
    try:
        rows = [r for r in first_claims(run) if r[1] in rank]
    except ApiError as err:
        return [f"queue_order: cannot read the tasks back: {err}"]
    out = []
    for ref, queue, claimed in rows:
        if claimed is None:
            continue
        for other, other_queue, other_claimed in rows:
            waiting = run.visible_at[other] < claimed - RACE_MS
            if rank[other_queue] < rank[queue] and waiting and (other_claimed or float("inf")) > claimed + RACE_MS:
                later = "never" if other_claimed is None else f"only {other_claimed - claimed:.0f} ms later"
                out.append(
                    f"{ref} (queue {queue}) was claimed while {other} (queue {other_queue}, earlier in "
                    f"queue_names {queues}) had been waiting {claimed - run.visible_at[other]:.0f} ms; "
                    f"{other} was claimed {later} (P-QUEUE-2)"
                )
                break
    return out[:3]


def queue_share(run: ScenarioRun, spec: dict) -> list[str]:
    """P-QUEUE-3: `queue`'s share among the first `first` claims lies in [min, max]. Claims of
    one batch share a stamp; a tied group at the cut counts with its own share (no bias)."""
    try:
        stamped = sorted((c, q) for _, q, c in first_claims(run) if c is not None)
    except ApiError as err:
        return [f"queue_share: cannot read the tasks back: {err}"]
    first = spec["first"]
    if len(stamped) < first:
        return [f"queue_share: only {len(stamped)} tasks were claimed, expected at least {first}"]
    cut = stamped[first - 1][0]
    before = [q for c, q in stamped if c < cut]
    tied = [q for c, q in stamped if c == cut]
    hits = before.count(spec["queue"]) + (first - len(before)) * tied.count(spec["queue"]) / len(tied)
    share = hits / first
    if not spec["min"] <= share <= spec["max"]:
        return [
            f"queue {spec['queue']} had {share:.3f} of the first {first} claims, expected "
            f"{spec['min']}..{spec['max']} (its weight's share, P-QUEUE-3)"
        ]
    return []


def queue_stats(run: ScenarioRun, row: dict) -> list[str]:
    """P-LABEL-3, P-OBS-4: the GET /queues row of (queue_name, handler_name) has these fields;
    without handler_name, the queue's entry in queue_controls (P-CTRL-3). Read in `tenant`
    when given (P-TEN-3)."""
    from .checks import contains, short

    queue, handler = row["queue_name"], row.get("handler_name")
    try:
        answer = run.api.call("GET", f"/queues?queue_name={queue}", tenant=row.get("tenant"))
        rows = answer["queues"] if handler else answer["queue_controls"]
    except (ApiError, KeyError, TypeError) as err:
        return [f"GET /queues?queue_name={queue}: {err!r}"]
    where = f"row ({queue}, {handler})" if handler else f"queue_controls entry of {queue}"
    found = [r for r in rows if r.get("queue_name") == queue and (not handler or r.get("handler_name") == handler)]
    if not found:
        return [f"GET /queues has no {where}"]
    if not contains(found[0], row["fields"]):
        return [f"GET /queues {where} is {short(found[0], 400)}, expected {short(row['fields'])}"]
    return []


def refused(run: ScenarioRun, name: str, spec: dict) -> list[str]:
    """P-SDK-23: the adapter exited non-zero before `ready`, never registered, and its stderr
    carries the SDK's error naming the refused option."""
    proc = run.worker(name)
    out = []
    if proc.ready.is_set():
        out.append(f"{name} accepted its options and started (ready event); expected the SDK to refuse them")
    if proc.exited_at is None:
        out.append(f"{name} is still running; expected it to exit at once, refusing its options")
    elif proc.exit_code == 0:
        out.append(f"{name} exited 0; expected a non-zero exit for refused options")
    pattern = spec.get("stderr_matches")
    if pattern and not re.search(pattern, proc.stderr_tail(40)):
        out.append(f"{name}: stderr does not match {pattern!r} (the error must name the option); "
                   f"stderr: {proc.stderr_tail(3)!r}")  # fmt: skip
    try:
        record = run.api.worker(proc.worker_id)
    except ApiError as err:
        return [*out, f"{name}: cannot read the worker record: {err}"]
    if record is not None:
        out.append(f"{name} registered (GET /workers/{{id}} found it); expected no request before the refusal")
    return out
