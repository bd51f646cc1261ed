"""Checks of the SDK runtime rules (docs/protocol.md section 14) read from the proxy's log,
the server's records and the adapter's events.

Each function returns human-readable reasons; an empty list means the check passed.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import socket
from typing import TYPE_CHECKING

from .api import ApiError

if TYPE_CHECKING:
    from .run import ScenarioRun

POLL = "/workers/tasks/poll"
COMPLETE_BATCH = "/workers/tasks/complete/batch"
FAIL_BATCH = "/workers/tasks/fail/batch"
SINGLE_RESULT = re.compile(r"^/workers/tasks/([^/]+)/(complete|fail)$")


def end_state(run: ScenarioRun, expect: dict) -> list[str]:
    """The expect-level checks of this module, in a fixed order."""
    out = server_errors(run) + deprecated_fields(run) + secrets_in_server_log(run)
    for name, limits in expect.get("poll_limits", {}).items():
        out += poll_limits(run, name, limits)
    for name, threshold in expect.get("poll_threshold", {}).items():
        out += poll_threshold(run, name, threshold)
    for name in expect.get("polls_overlap_reporting", []):
        out += polls_overlap_reporting(run, name)
    if "server_rejections" in expect:
        out += server_rejections(run, expect["server_rejections"])
    if expect.get("completions_via_batch"):
        out += completions_via_batch(run)
    if expect.get("refused_batches_resent"):
        out += refused_batches_resent(run)
    for spec in expect.get("retry_after_waits", []):
        out += retry_after_waits(run, spec)
    for name, bounds in expect.get("polls_during_faults", {}).items():
        out += polls_during_faults(run, name, bounds)
    if "requests_identify" in expect:
        out += requests_identify(run, expect["requests_identify"])
    if "requests_tenant" in expect:
        out += requests_tenant(run, expect["requests_tenant"])
    for spec in expect.get("adapter_events", []):
        out += adapter_event(run, spec)
    for name, texts in expect.get("stderr_mentions", {}).items():
        out += stderr_mentions(run, name, texts)
    return out


def _body(r: dict) -> dict:
    return r.get("body") if isinstance(r.get("body"), dict) else {}


def requests_of(run: ScenarioRun, name: str, prefix: str) -> list[dict]:
    """Requests under `prefix` sent by worker `name`: its worker_id in the body, or any when it
    is the only worker of the run (result calls carry no worker id)."""
    worker_id = run.worker(name).worker_id
    alone = len(run.workers) == 1
    found = []
    for r in list(run.proxy.requests):
        if not r["path"].startswith(prefix):
            continue
        sender = _body(r).get("worker_id")
        if sender == worker_id or (sender is None and alone):
            found.append(r)
    return found


def poll_limits(run: ScenarioRun, name: str, limits: dict) -> list[str]:
    """P-SDK-13: batch_size <= 100, handler_names <= 50, every handler is polled for, and one
    long-poll at a time (a poll is sent only once the previous one was answered)."""
    polls = requests_of(run, name, POLL)
    if not polls:
        return [f"{name} sent no poll through the proxy"]
    out = []
    max_size, max_names = limits.get("max_batch_size", 100), limits.get("max_handler_names", 50)
    polled: set[str] = set()
    for r in polls:
        body = _body(r)
        size = body.get("batch_size", 10 if r["path"].endswith("/batch") else 1)
        names = body.get("handler_names") or []
        polled |= set(names)
        if not isinstance(size, int) or not 1 <= size <= max_size:
            out.append(f"{name} polled with batch_size {size!r}, expected 1..{max_size} (P-SDK-13)")
        if len(names) > max_names:
            out.append(f"{name} polled with {len(names)} handler_names, expected at most {max_names} (P-SDK-13)")
    ordered = sorted(polls, key=lambda r: r["t"])
    for a, b in itertools.pairwise(ordered):
        if a.get("answered") and b["t"] < a["answered"] - 5:  # 5 ms: the proxy's own clock reads
            out.append(f"{name} sent a poll while another was in flight (P-SDK-13: one long-poll at a time)")
            break
    registered = next(
        (_body(r).get("handlers") for r in requests_of(run, name, "/workers") if r["path"] == "/workers"), None
    )
    missing = sorted(set(registered or []) - polled)
    if missing and all(_body(r).get("handler_names") for r in polls):
        out.append(f"{name} never polled for {len(missing)} registered handlers, e.g. {missing[:3]} (P-SDK-13)")
    return sorted(set(out), key=out.index)[:4]


# A handler of the scenario (echo) returns within its params' sleep_ms and this long of its
# delivery; a task delivered longer ago whose completion is not yet answered is being reported.
HANDLER_GRACE_MS = 150
# A completion batch that reached the proxy this long before a poll was sent before the
# poll's size was chosen: its results were being reported then. Less, and the two may have
# raced (separate connections), the worker choosing the size with nothing yet handed over.
SENT_BEFORE_MS = 25


def poll_threshold(run: ScenarioRun, name: str, threshold: int) -> list[str]:
    """P-SDK-26: a poll for fewer than the threshold is allowed only when no result is being
    reported. With every completion held by the proxy, a result is being reported when its
    task was delivered over its handler's sleep_ms + HANDLER_GRACE_MS ago, or its completion
    batch reached the proxy over SENT_BEFORE_MS before the poll, and its completion is not
    answered yet; tasks delivered just before the poll may still be in their handlers."""
    polls = sorted(requests_of(run, name, POLL), key=lambda r: r["t"])
    if not polls:
        return [f"{name} sent no poll through the proxy"]
    handler_ms = {run.ids[ref]: spec.get("params", {}).get("sleep_ms", 0) for ref, spec in run.sent.items()}
    # task id -> when its handler was due to return (its delivery plus its sleep_ms)
    delivered = {
        tid: p["answered"] + handler_ms.get(tid, 0)
        for p in polls
        if "answered" in p
        for tid in p.get("claimed_ids", [])
    }
    acked: dict[str, float] = {}
    sent: dict[str, float] = {}
    for c in requests_of(run, name, COMPLETE_BATCH):
        for tid in c.get("task_ids", []) if "answered" in c else []:
            acked[tid] = min(acked.get(tid, c["answered"]), c["answered"])
            sent[tid] = min(sent.get(tid, c["t"]), c["t"])
    small = []
    for p in polls:
        size, t = _body(p).get("batch_size"), p["t"]
        if isinstance(size, int) and size >= threshold:
            continue
        reporting = [tid for tid, done in delivered.items()
                     if min(done + HANDLER_GRACE_MS, sent.get(tid, float("inf")) + SENT_BEFORE_MS) <= t
                     and acked.get(tid, float("inf")) > t]  # fmt: skip
        if reporting or not isinstance(size, int):
            small.append(size)
    if small:
        sizes = [_body(p).get("batch_size") for p in polls]
        return [f"{name} polled for {small[:5]} tasks while results were being reported, expected at least "
                f"{threshold} (P-SDK-26); poll sizes in order: {sizes[:12]}"]  # fmt: skip
    return []


def polls_overlap_reporting(run: ScenarioRun, name: str) -> list[str]:
    """P-SDK-3: a completion frees its slot once handed over, so some poll asks for more tasks
    than the slots a worker holding every unanswered task would have free.

    At a poll's arrival the worker holds at least the tasks delivered to it (polls answered
    earlier) less those whose results were answered earlier: a result answered at the proxy
    may not have reached the worker yet, so this count is never too high. A worker that keeps
    a slot until its result is answered polls only for `concurrency - held` tasks; one that
    frees it at hand-over asks for more. This reads no race between a poll and the completion
    batch sent beside it: either may reach the proxy first."""
    concurrency = int(run.scenario.get("worker", {}).get("concurrency", 10))
    polls = sorted(requests_of(run, name, POLL), key=lambda r: r["t"])
    delivered = [(p["answered"], len(p.get("claimed_ids", []))) for p in polls if "answered" in p]
    answered = [
        (r["answered"], len(r.get("task_ids") or []))
        for r in requests_of(run, name, "/workers/tasks/")
        if "answered" in r and r.get("status") == 200 and not r["path"].startswith(POLL)
    ]
    asked = []
    for p in polls:
        size = _body(p).get("batch_size")
        held = sum(n for at, n in delivered if at < p["t"]) - sum(n for at, n in answered if at < p["t"])
        if isinstance(size, int) and held + size > concurrency:
            return []
        asked.append(f"{size} holding {held}")
    return [f"{name} never polled for more than the slots left while its results were unanswered (concurrency "
            f"{concurrency}; polls: {', '.join(asked[:6])}): "
            "the slots of handed-over results stayed taken (P-SDK-3)"]  # fmt: skip


def server_rejections(run: ScenarioRun, allowed: int) -> list[str]:
    """Requests the server itself refused for their shape or size (400, 413, 422)."""
    refused = [r for r in list(run.proxy.requests) if r["fault"] == "none" and r.get("status") in (400, 413, 422)]
    if len(refused) <= allowed:
        return []
    shown = ", ".join(f"{r['method']} {r['path']} -> {r['status']}" for r in refused[:3])
    return [f"the server refused {len(refused)} requests as malformed or too large ({shown}), expected <= {allowed}"]


def server_errors(run: ScenarioRun) -> list[str]:
    """Checked in every run: the server never answers 500 (a problem with a stable code instead)."""
    crashed = [r for r in list(run.proxy.requests) if r["fault"] == "none" and r.get("status") == 500]
    if not crashed:
        return []
    shown = ", ".join(sorted({f"{r['method']} {r['path']}" for r in crashed})[:2])
    return [f"the server answered 500 to {len(crashed)} requests ({shown}): a server bug, see server.log"]


# Wire names kept only as deprecated aliases (openapi 1.1, issue 19): an SDK never sends them.
DEPRECATED_FIELDS = ("extend_ms",)


def deprecated_fields(run: ScenarioRun) -> list[str]:
    """Checked in every run: no request carries a deprecated field name (P-SDK-19: `lease_ms`)."""
    used = {
        (r["path"].rsplit("/", 1)[-1], field)
        for r in list(run.proxy.requests)
        for field in DEPRECATED_FIELDS
        if field in (r.get("keys") or [])
    }
    return [f"a {what} request sent the deprecated field {field!r}" for what, field in sorted(used)]


def completions_via_batch(run: ScenarioRun) -> list[str]:
    """P-SDK-12: completions go through POST /workers/tasks/complete/batch."""
    requests = list(run.proxy.requests)
    singles = [r for r in requests if (m := SINGLE_RESULT.match(r["path"])) and m[2] == "complete"]
    batches = [r for r in requests if r["path"] == COMPLETE_BATCH]
    out = []
    if singles:
        out.append(f"{len(singles)} completions were sent one by one ({singles[0]['path']}), expected complete/batch")
    if not batches:
        out.append("no POST /workers/tasks/complete/batch was sent (P-SDK-12)")
    return out


def refused_batches_resent(run: ScenarioRun) -> list[str]:
    """P-SDK-15: a completion batch refused as a whole is split; no item of it is dropped."""
    requests = list(run.proxy.requests)
    refused = [r for r in requests if r["path"] == COMPLETE_BATCH and r.get("status") == 413]
    multi = [r for r in refused if len(r.get("task_ids") or []) > 1]
    if not multi:
        return [f"no completion batch of more than one item was refused ({len(refused)} refused): nothing to split"]
    out = []
    for r in multi:
        later = [x for x in requests if x["t"] > r["t"]]
        for task_id in r["task_ids"]:
            if not any(task_id in (x.get("task_ids") or []) for x in later):
                ref = next((k for k, v in run.ids.items() if v == task_id), task_id)
                out.append(f"{ref}: its result was in a refused batch of {len(r['task_ids'])} and never re-sent")
    return out[:4]


def retry_after_waits(run: ScenarioRun, spec: dict) -> list[str]:
    """P-SDK-16: after an answer with `Retry-After: N` (seconds), the worker's next request to
    the same path comes N s to N s + 10% later (plus `slack_ms` for scheduling).

    The wait runs from when the worker took the answer (the proxy's `taken`), so a worker
    stalled on a loaded machine is not blamed for reading it late. The lower bound is
    measured from when the proxy sent it: `taken` is stamped on the runner's own thread and
    can only be late, which would shrink the measured wait, and a worker that retries early
    still comes back less than N s after the send."""
    name, path = spec["worker"], spec["path"]
    requests = requests_of(run, name, path)
    out, seen = [], 0
    for i, r in enumerate(requests):
        if r.get("retry_after") is None:
            continue
        seen += 1
        if i + 1 == len(requests):
            out.append(f"{name}: no request to {path} after the {r['fault']} with Retry-After: {r['retry_after']}")
            continue
        told = f"a {r['fault']} with Retry-After: {r['retry_after']}"
        wait = float(r["retry_after"]) * 1000
        low, high = wait - 50, wait * 1.1 + spec.get("slack_ms", 500)  # 50 ms: clock granularity
        sent, taken, came = r["t"], r.get("taken") or r["t"], requests[i + 1]["t"]
        if came - sent < low:
            out.append(
                f"{name}: next request to {path} came {came - sent:.0f} ms after {told} was sent, "
                f"expected at least {low:.0f} ms (P-SDK-16)"
            )
        elif came - taken > high:
            out.append(
                f"{name}: next request to {path} came {came - taken:.0f} ms after it took {told} "
                f"({taken - sent:.0f} ms after it was sent), expected at most {high:.0f} ms (P-SDK-16)"
            )
    if not seen:
        out.append(f"{name}: no answer with Retry-After was injected on {path}")
    return out[:3]


def polls_during_faults(run: ScenarioRun, name: str, bounds: dict) -> list[str]:
    """P-SDK-9/16: during an injected outage the worker backs off instead of hammering."""
    faulted = [r for r in requests_of(run, name, POLL) if r["fault"] != "none"]
    if len(faulted) < bounds.get("min", 0) or len(faulted) > bounds.get("max", len(faulted)):
        return [f"{name} sent {len(faulted)} polls into the injected outage, expected {bounds}"]
    return []


def stderr_mentions(run: ScenarioRun, name: str, texts: list[str]) -> list[str]:
    """P-SDK-22: the worker's own log (stderr) names the cause of what went wrong."""
    try:
        log = run.worker(name).stderr_path.read_text(errors="replace")
    except OSError:
        log = ""
    return [
        f"{name}: its stderr never mentions {text!r} (P-SDK-22: warnings name their cause)"
        for text in texts
        if text not in log
    ]


def requests_identify(run: ScenarioRun, spec: dict) -> list[str]:
    """P-SDK-1: every request names the SDK in its user agent and carries the API key."""
    pattern = re.compile(spec["user_agent"].replace("{sdk}", re.escape(run.sdk))) if "user_agent" in spec else None
    out = []
    for r in list(run.proxy.requests):
        if pattern and not pattern.search(r.get("user_agent") or ""):
            out.append(
                f"{r['method']} {r['path']} has User-Agent {r.get('user_agent')!r}, expected /{pattern.pattern}/"
            )
        if "authorization" in spec and r.get("authorization") != spec["authorization"]:
            out.append(f"{r['method']} {r['path']} has Authorization {r.get('authorization')!r}")
    if not run.proxy.requests:
        out.append("no request went through the proxy")
    return sorted(set(out), key=out.index)[:3]


def requests_tenant(run: ScenarioRun, tenant: str | None) -> list[str]:
    """P-SDK-24: every request carries the tenant as X-Tenant-Id, or, without one, no such header."""
    out = [
        f"{r['method']} {r['path']} has X-Tenant-Id {r.get('tenant')!r}, expected "
        + (repr(tenant) if tenant is not None else "no such header")
        for r in list(run.proxy.requests)
        if r.get("tenant") != tenant
    ]
    if not run.proxy.requests:
        out.append("no request went through the proxy")
    return sorted(set(out), key=out.index)[:3]


def results_sent(run: ScenarioRun, task_id: str, want: dict) -> list[str]:
    """How many complete / fail requests carried this task's result (batch items included)."""
    counts = {"complete": 0, "fail": 0}
    for r in list(run.proxy.requests):
        if task_id not in (r.get("task_ids") or []):
            continue
        m = SINGLE_RESULT.match(r["path"])
        kind = m[2] if m else ("complete" if r["path"] == COMPLETE_BATCH else "fail")
        counts[kind] += 1
    return [
        f"{kind} requests carrying its result: {counts[kind]}, expected {n}"
        for kind, n in want.items()
        if counts[kind] != n
    ]


def registration(run: ScenarioRun, name: str, want: dict) -> list[str]:
    """P-SDK-21: the worker record as registered. `$hostname`, `$pid` and `$sdk` are placeholders."""
    proc = run.worker(name)
    try:
        record = run.api.worker(proc.worker_id)
    except ApiError as err:
        return [f"{name}: cannot read the worker record: {err}"]
    if record is None:
        return [f"{name}: GET /workers/{proc.worker_id} is 404"]
    out = []
    for key, value in want.items():
        got = record.get(key)
        if value == "$hostname":
            ok, value = got == socket.gethostname(), socket.gethostname()
        elif value == "$pid":
            ok, value = got == proc.proc.pid, proc.proc.pid
        elif value == "$sdk":
            ok = isinstance(got, str) and re.fullmatch(rf"orch8-{re.escape(run.sdk)}/[0-9][\w.+-]*", got) is not None
            value = f"orch8-{run.sdk}/<version>"
        elif key == "handlers" and isinstance(got, list):
            ok = sorted(got) == sorted(value)
        else:
            ok = got == value
        if not ok:
            out.append(f"{name}: registered {key} is {got!r}, expected {value!r} (P-SDK-21)")
    return out


def default_worker_id(run: ScenarioRun, name: str) -> list[str]:
    """P-SDK-21: `<hostname>-<pid>-<8 lowercase hex>`."""
    proc = run.worker(name)
    pattern = rf"{re.escape(socket.gethostname())}-{proc.proc.pid}-[0-9a-f]{{8}}"
    if proc.worker_id and re.fullmatch(pattern, proc.worker_id):
        return []
    return [f"{name}: default worker id is {proc.worker_id!r}, expected <hostname>-<pid>-<8 hex> ({pattern})"]


def adapter_event(run: ScenarioRun, spec: dict) -> list[str]:
    """An adapter event (e.g. `heartbeat_error`) with these fields was reported."""
    events = run.events(spec["event"], spec.get("task"), spec.get("worker"))
    if any(all(e.get(k) == v for k, v in spec.get("fields", {}).items()) for e in events):
        return []
    seen = [{k: e.get(k) for k in spec.get("fields", {})} for e in events][:3]
    where = f" for {spec['task']}" if "task" in spec else ""
    return [f"no `{spec['event']}` event{where} with {spec.get('fields', {})} (saw {seen or 'none'})"]


def secrets_in_server_log(run: ScenarioRun) -> list[str]:
    """P-AUTH-8, P-AUTH-4: a keyed server (run with --access-log at debug) writes no key
    and no digest of one to any log line; the log must hold the access lines at all."""
    server = run.server
    if server is None or not server.secrets():
        return []
    text = server.log_text()
    if '"GET /' not in text and '"POST /' not in text and "GET /" not in text:
        return ["the keyed server's log holds no access-log line (was --access-log lost?)"]
    out = []
    for secret in server.secrets():
        digest = hashlib.sha256(secret.encode()).hexdigest()
        for label, needle in (("a key", secret), ("a key's SHA-256", digest)):
            if needle and needle in text:
                out.append(f"the server log holds {label} (P-AUTH-8): {needle[:6]}...")
    return out
