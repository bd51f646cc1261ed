"""P-SDK-11 checks: the adapter's `stats` snapshots and `hook` events against each other,
the server's attempts of the worker and the polls the proxy saw.

Each function returns human-readable reasons; an empty list means the check passed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .checks_sdk import POLL, requests_of

if TYPE_CHECKING:
    from .run import ScenarioRun

STAT_NAMES = (
    "tasks_claimed",
    "tasks_completed",
    "tasks_failed",
    "tasks_lease_lost",
    "tasks_cancelled",
    "tasks_released",
    "in_flight",
    "polls",
    "poll_errors",
)


def _hooks(run: ScenarioRun, name: str, hook: str) -> list[dict]:
    return [e for e in run.events("hook", worker=name) if e.get("hook") == hook]


def observability(run: ScenarioRun, name: str) -> list[str]:
    """P-SDK-11: stats() counters and hook events agree with each other, the server and the proxy."""
    proc = run.worker(name)
    snapshots = [e.get("stats") for e in proc.events if isinstance(e.get("stats"), dict)]
    if not snapshots:
        return [f"{name}: the adapter reported no stats (a `stats` field on `stats`/`stopped` events)"]
    out = []
    for s in snapshots:
        missing = [k for k in STAT_NAMES if not isinstance(s.get(k), int)]
        if missing:
            return [f"{name}: stats() lacks counters {missing} (P-SDK-11)"]
        settled = ("tasks_completed", "tasks_failed", "tasks_lease_lost", "tasks_cancelled", "tasks_released")
        if s["tasks_claimed"] != sum(s[k] for k in settled) + s["in_flight"]:
            out.append(
                f"{name}: stats {_fmt(s)} break claimed = completed + failed + lease_lost + cancelled + released"
                " + in_flight"
            )
            break
    final = next((e["stats"] for e in reversed(proc.events) if e.get("event") == "stopped" and "stats" in e), None)
    if final is None:
        return [*out, f"{name}: no `stopped` event with stats (the scenario must stop the worker)"]
    out += _against_server(run, name, final)
    out += _against_proxy(run, name, final)
    out += _against_hooks(run, name, final)
    return out


def _fmt(s: dict) -> str:
    return ", ".join(f"{k.removeprefix('tasks_')}={s[k]}" for k in STAT_NAMES)


def _against_server(run: ScenarioRun, name: str, final: dict) -> list[str]:
    worker_id = run.worker(name).worker_id
    outcomes: dict[str, int] = {}
    for task_id in run.ids.values():
        for a in run.api.attempts(task_id):
            if a.get("worker_id") == worker_id:
                outcomes[a["outcome"]] = outcomes.get(a["outcome"], 0) + 1
    server = {
        "tasks_claimed": sum(outcomes.values()),
        "tasks_completed": outcomes.get("completed", 0),
        "tasks_failed": outcomes.get("failed", 0),
        "tasks_cancelled": outcomes.get("cancelled", 0),
        "tasks_released": outcomes.get("released", 0),  # P-SDK-32, P-SDK-33
        "tasks_lease_lost": outcomes.get("lease_expired", 0) + outcomes.get("worker_lost", 0),
        "in_flight": 0,
    }
    return [
        f"{name}: final stats {key} = {final[key]}, the server's attempts of this worker say {want} (P-SDK-11)"
        for key, want in server.items()
        if final[key] != want
    ]


def _against_proxy(run: ScenarioRun, name: str, final: dict) -> list[str]:
    polls = requests_of(run, name, POLL)
    failed = [r for r in polls if r["fault"] != "none" or (r.get("status") or 500) >= 400]
    out = []
    # An aborted long-poll at shutdown may or may not count as failed, so allow one either way.
    if not len(polls) <= final["polls"] <= len(polls) + 1:
        out.append(f"{name}: stats polls = {final['polls']}, the proxy saw {len(polls)} polls (P-SDK-11)")
    if not len(failed) - 1 <= final["poll_errors"] <= len(failed) + 1:
        out.append(f"{name}: stats poll_errors = {final['poll_errors']}, the proxy saw {len(failed)} failed polls")
    return out


def _against_hooks(run: ScenarioRun, name: str, final: dict) -> list[str]:
    out = []
    pairs = {
        "task_complete": final["tasks_completed"],
        "task_fail": final["tasks_failed"],
        "task_abandoned": final["tasks_lease_lost"] + final["tasks_cancelled"],
    }
    for hook, want in pairs.items():
        got = len(_hooks(run, name, hook))
        if got != want:
            out.append(f"{name}: {got} `{hook}` hook events, the stats say {want} (P-SDK-11)")
    claimed = sum(e.get("claimed") or 0 for e in _hooks(run, name, "poll"))
    if claimed != final["tasks_claimed"]:
        out.append(
            f"{name}: `poll` hooks claimed {claimed} tasks in all, stats tasks_claimed = {final['tasks_claimed']}"
        )
    starts = len(run.events("start", worker=name))
    if len(_hooks(run, name, "task_start")) < starts:
        out.append(f"{name}: {len(_hooks(run, name, 'task_start'))} `task_start` hook events for {starts} handler runs")
    if final["poll_errors"] and not [e for e in _hooks(run, name, "error") if e.get("operation") == "poll"]:
        out.append(f"{name}: {final['poll_errors']} poll errors but no `error` hook with operation `poll`")
    out += _payloads(run, name)
    return out


REQUIRED: dict[str, dict[str, Any]] = {
    "poll": {"claimed": int, "duration_ms": (int, float)},
    "task_start": {"task_id": str},
    "task_complete": {"task_id": str, "duration_ms": (int, float)},
    "task_fail": {"task_id": str, "code": str, "retryable": bool, "duration_ms": (int, float)},
    "task_abandoned": {"task_id": str, "reason": str},
    "error": {"operation": str, "error": str},
}


def _payloads(run: ScenarioRun, name: str) -> list[str]:
    out = []
    for hook, fields in REQUIRED.items():
        for e in _hooks(run, name, hook):
            bad = [
                k
                for k, kind in fields.items()
                if not isinstance(e.get(k), kind) or isinstance(e.get(k), bool) != (kind is bool)
            ]
            if bad:
                out.append(f"{name}: `{hook}` hook payload lacks or mistypes {bad}: {e}")
                break
    for e in _hooks(run, name, "task_abandoned"):
        if e.get("reason") not in ("lease_lost", "cancelled"):
            out.append(f"{name}: `task_abandoned` reason {e.get('reason')!r}, expected lease_lost or cancelled")
            break
    return out
