"""Checks of concurrency keys (docs/protocol.md 4c, P-KEY-1..7) and of fairness across
tenants (12c, P-TEN-5), from the attempt history.

A key's slots are counted from its tasks' attempts (started_at .. ended_at on the server):
a claimable task holds a slot too, so this count is a lower bound of the slots taken, and a
count above the limit is a violation on every replica. An instance key's (P-KEY-7) are
counted from its instances' spans: the first start to the last end of their step tasks'
attempts, a lower bound of the time each holds its slot in the same way.

Each function returns human-readable reasons; an empty list means the check passed.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from .api import ApiError

if TYPE_CHECKING:
    from .run import ScenarioRun


def end_state(run: ScenarioRun, expect: dict) -> list[str]:
    """The expect-level checks of this module, in a fixed order."""
    out = []
    if "key_slots" in expect or "tenant_key_slots" in expect:
        out += key_slots(run, expect.get("key_slots", {}), expect.get("tenant_key_slots", {}))
    for done, later in expect.get("done_before_last_start", {}).items():
        out += done_before_last_start(run, done, later)
    if "attempt_order" in expect:
        out += attempt_order(run, [(ref, n) for ref, n in expect["attempt_order"]])
    for group, bound in expect.get("claimed_within_ms", {}).items():
        out += claimed_within(run, group, bound)
    instance_checks = ("instance_key_slots", "instance_start_order", "instance_not_held")
    if any(k in expect for k in instance_checks):
        try:
            spans = instance_spans(run)
        except ApiError as err:
            return [*out, f"instance keys: cannot read the instances' tasks back: {err}"]
        out += instance_key_slots(run, expect.get("instance_key_slots", {}), spans)
        if "instance_start_order" in expect:
            out += instance_start_order(expect["instance_start_order"], spans)
        for ref, key in expect.get("instance_not_held", {}).items():
            out += instance_not_held(run, ref, key, spans)
    return out


def peak(spans: list[tuple[float, float]]) -> int:
    """The most spans open at once; an end at the same ms as a start comes first (a slot
    freed and taken again in one ms is one slot)."""
    points = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    held = most = 0
    for _, delta in points:
        held += delta
        most = max(most, held)
    return most


def key_slots(run: ScenarioRun, bounds: dict[str, dict], per_tenant: dict[str, dict[str, dict]]) -> list[str]:
    """P-KEY-1, P-KEY-4: per key (`bounds`: in every tenant together; `per_tenant`: in one
    tenant), the most of its tasks' attempts (workflow steps' included) that overlapped lies
    within the bounds (`max`: the limit held; `min`: the limit was reached, not merely
    respected). Every task enqueued with a key must read back with it and its limit."""
    try:
        out, spans = key_spans(run)
    except ApiError as err:
        return [f"key_slots: cannot read the tasks back: {err}"]
    together: dict[str, list[tuple[float, float]]] = {}
    for (_, key), found in spans.items():
        together.setdefault(key, []).extend(found)
    wanted = [(key, bound, together.get(key, []), "") for key, bound in bounds.items()]
    wanted += [
        (key, bound, spans.get((tenant, key), []), f" in tenant {tenant}")
        for tenant, keys in per_tenant.items()
        for key, bound in keys.items()
    ]
    for key, bound, found, where in wanted:
        most = peak(found)
        if most > bound.get("max", most) or most < bound.get("min", most):
            out.append(
                f"key {key!r}{where} had {most} tasks running at once (attempt spans), expected {bound} (P-KEY-1)"
            )
    return out


def key_spans(run: ScenarioRun) -> tuple[list[str], dict[tuple[str, str], list[tuple[float, float]]]]:
    """Read-back mismatches, and (tenant, key) -> (start, end) of its tasks' attempts."""
    from .checks import ms  # checks imports this module

    out = []
    tasks = [run.api.task(task_id) for task_id in run.ids.values()]
    for ref, task in zip(run.ids, tasks, strict=True):
        sent = run.sent.get(ref, {})
        want = (sent.get("concurrency_key"), sent.get("max_concurrency", 1) if "concurrency_key" in sent else None)
        got = (task.get("concurrency_key"), task.get("max_concurrency"))
        if got != want:
            out.append(f"{ref} reads back concurrency_key, max_concurrency {got}, it was enqueued with {want}")
    spans: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for task in tasks + step_tasks(run):
        if task.get("concurrency_key") is None:
            continue
        tenant = run.api.task_tenant.get(task["id"], "default")
        for a in run.api.attempts(task["id"]):
            end = ms(a.get("ended_at")) or float("inf")
            spans.setdefault((tenant, task["concurrency_key"]), []).append((ms(a["started_at"]), end))
    return out, spans


def step_tasks(run: ScenarioRun) -> list[dict]:
    """The tasks of the run's workflow instances (P-KEY-5: a step's task carries its key)."""
    return [task for instance_id in run.instances.values() for task in instance_tasks(run, instance_id)]


def instance_tasks(run: ScenarioRun, instance_id: str) -> list[dict]:
    """The step tasks of one instance (GET /tasks?instance_id=, every page)."""
    found, cursor = [], None
    while True:
        query = {"instance_id": instance_id, "limit": 100, **({"cursor": cursor} if cursor else {})}
        page = run.api.call("GET", "/tasks?" + urlencode(query))
        found += page["tasks"]
        cursor = page.get("next_cursor")
        if not cursor:
            return found


def done_before_last_start(run: ScenarioRun, done: str, later: str) -> list[str]:
    """P-KEY-2: every task of group `done` ended before the last task of group `later` was
    first claimed: tasks held behind a full key did not hold the others back."""
    from .checks import group_attempts, ms

    ends, out = group_attempts(run, done, "done_before_last_start")
    if out:
        return out
    firsts, out = group_attempts(run, later, "done_before_last_start")
    if out:
        return out
    if not all(firsts.values()):
        return [f"done_before_last_start: a task of {later!r} was never claimed"]
    last_start = max(ms(a[0]["started_at"]) for a in firsts.values())
    for ref, attempts in ends.items():
        ended = ms(attempts[-1].get("ended_at")) if attempts else None
        if ended is None:
            out.append(f"{ref} never ended: held tasks of a full key held it back? (P-KEY-2)")
        elif ended > last_start:
            out.append(
                f"{ref} ended {ended - last_start:.0f} ms after the last task of {later!r} started: "
                "held tasks of a full key held it back (P-KEY-2)"
            )
    return out


def claimed_within(run: ScenarioRun, group: str, bound: int) -> list[str]:
    """P-TEN-5: every task of `group` was first claimed within `bound` ms of its enqueue's
    acknowledgement, however large another tenant's backlog of the same handler."""
    from .checks import group_attempts, ms

    found, out = group_attempts(run, group, "claimed_within_ms")
    for ref, attempts in found.items():
        waited = ms(attempts[0]["started_at"]) - run.visible_at[ref] if attempts else None
        if waited is None or waited > bound:
            late = "was never claimed" if waited is None else f"was first claimed {waited:.0f} ms after its enqueue"
            out.append(f"{ref} {late}, expected within {bound} ms: another tenant's backlog held it back? (P-TEN-5)")
    return out


def attempt_order(run: ScenarioRun, wanted: list[tuple[str, int]]) -> list[str]:
    """P-KEY-3: these attempts (task ref, attempt number) started in this order, e.g. a task
    of the key ran while another waited for its retry, which then went ahead of younger ones."""
    from .checks import ms

    started = {}
    try:
        for ref, n in wanted:
            attempts = {a["attempt"]: a for a in run.api.attempts(run.task_id(ref))}
            if n not in attempts:
                return [f"attempt_order: {ref} has no attempt {n} (it has {sorted(attempts)})"]
            started[(ref, n)] = ms(attempts[n]["started_at"])
    except ApiError as err:
        return [f"attempt_order: cannot read the attempts back: {err}"]
    got = sorted(wanted, key=lambda w: started[w])
    if got == wanted:
        return []
    return [f"attempts started in the order {got}, expected {wanted} (P-KEY-3)"]


Span = tuple[float, float]


def instance_spans(run: ScenarioRun) -> dict[str, Span | None]:
    """Instance ref -> (first start, last end) of its step tasks' attempts; None when no
    step ever started, and an end of infinity while an attempt has not ended."""
    from .checks import ms

    spans: dict[str, Span | None] = {}
    for ref, instance_id in run.instances.items():
        attempts = [a for task in instance_tasks(run, instance_id) for a in run.api.attempts(task["id"])]
        if not attempts:
            spans[ref] = None
            continue
        ends = [ms(a.get("ended_at")) for a in attempts]
        end = float("inf") if None in ends else max(e for e in ends if e is not None)
        spans[ref] = (min(ms(a["started_at"]) for a in attempts), end)
    return spans


def instance_key_slots(run: ScenarioRun, bounds: dict[str, dict], spans: dict[str, Span | None]) -> list[str]:
    """P-KEY-7: per instance key, the most of its instances whose spans overlapped lies within
    the bounds (`max`: the limit held; `min`: it was reached). Every instance started with a
    key reads back with it and its limit (1 by default), and one without a key with neither."""
    from .checks_workflows import instance

    out = []
    by_key: dict[str, list[Span]] = {}
    for spec in run.scenario.get("instances", []):
        ref, key = spec["ref"], spec.get("concurrency_key")
        want = (key, spec.get("max_concurrency", 1) if key is not None else None)
        found = instance(run, ref) or {}
        got = (found.get("concurrency_key"), found.get("max_concurrency"))
        if got != want:
            out.append(f"instance {ref} reads back concurrency_key, max_concurrency {got}, it was started with {want}")
        span = spans.get(ref)
        if key is not None and span is not None:
            by_key.setdefault(key, []).append(span)
    for key, bound in bounds.items():
        most = peak(by_key.get(key, []))
        if most > bound.get("max", most) or most < bound.get("min", most):
            out.append(
                f"instance key {key!r} had {most} instances running at once (first step start to last step end), "
                f"expected {bound} (P-KEY-7)"
            )
    return out


def instance_start_order(refs: list[str], spans: dict[str, Span | None]) -> list[str]:
    """P-KEY-7: waiting instances start in start order: these instances' first step tasks
    were first claimed in this order (the same ms counts as in order)."""
    starts = {ref: span[0] for ref in refs if (span := spans.get(ref)) is not None}
    if len(starts) < len(refs):
        return [f"instance_start_order: {', '.join(r for r in refs if r not in starts)} never started a step"]
    if all(starts[a] <= starts[b] for a, b in pairwise(refs)):
        return []
    got = sorted(refs, key=starts.__getitem__)
    return [f"instances started their first steps in the order {got}, expected {refs} (P-KEY-7)"]


def instance_not_held(run: ScenarioRun, ref: str, key: str, spans: dict[str, Span | None]) -> list[str]:
    """P-KEY-7: instance `ref` (another key, or none) ended its last step before the last
    instance of `key` started its first: a full instance key held nothing else back."""
    keyed = [s["ref"] for s in run.scenario.get("instances", []) if s.get("concurrency_key") == key]
    starts = [span[0] for r in keyed if (span := spans.get(r)) is not None]
    if not keyed or len(starts) < len(keyed):
        return [f"instance_not_held: an instance of {key!r} never started a step"]
    span = spans.get(ref)
    if span is None:
        return [f"instance {ref} never started a step: held behind instance key {key!r}? (P-KEY-7)"]
    if span[1] > max(starts):
        return [
            f"instance {ref} ended {span[1] - max(starts):.0f} ms after the last instance of {key!r} started: "
            "held behind a full instance key (P-KEY-7)"
        ]
    return []
