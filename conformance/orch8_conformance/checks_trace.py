"""Trace-context checks (P-TEL-1, P-TEL-3): what the `echo_trace` handler saw.

`echo_trace` returns the `traceparent` / `tracestate` of its task's headers and, from the
span current inside the handler, `trace_id` and `parent_span_id`. The header part applies to
every adapter; the span part to adapters whose `ready` event says `"tracing": true` (the
SDK adapters started with ORCH8_TELEMETRY=1). An adapter without a tracer (raw-http) says
`"tracing": false`: that part is recorded as not applicable in the run's notes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .api import ApiError
from .checks import short

if TYPE_CHECKING:
    from .run import ScenarioRun

# W3C trace context, version 00: version-traceid-parentid-flags.
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
TRACE_ID = re.compile(r"^(?!0{32})[0-9a-f]{32}$")


def trace_context(run: ScenarioRun, refs: list[str]) -> list[str]:
    """Reasons for every ref of `expect.trace_context` (a group ref checks each member)."""
    out = []
    tracing = adapters_tracing(run)
    if not all(tracing.values()):
        run.notes.append(
            f"P-TEL-3 span part not applicable: {', '.join(n for n, t in tracing.items() if not t)} "
            "reported `tracing: false` (no tracer); the header part (P-TEL-1) was checked"
        )
    for key in refs:
        for ref in run.groups.get(key, [key]):
            out += [f"{ref}: {r}" for r in one(run, ref, any(tracing.values()))]
    return out


def adapters_tracing(run: ScenarioRun) -> dict[str, bool]:
    """worker name -> whether its adapter's `ready` event said it traces."""
    found = {}
    for name, proc in run.workers.items():
        ready = [e for e in list(proc.events) if e.get("event") == "ready"]
        found[name] = bool(ready and ready[0].get("tracing"))
    return found


def one(run: ScenarioRun, ref: str, spans: bool) -> list[str]:
    try:
        output = run.api.task(run.task_id(ref)).get("output")
    except ApiError as err:
        return [f"cannot read it back: {err}"]
    if not isinstance(output, dict):
        return [f"output is {short(output)}, expected the echo_trace handler's object"]
    headers = run.sent[ref].get("headers") or {}
    sent = headers.get("traceparent")
    out = []
    # P-TEL-1: the context reaches the handler exactly as the producer sent it.
    for key in ("traceparent", "tracestate"):
        if output.get(key) != headers.get(key):
            out.append(f"the handler saw {key} {output.get(key)!r}, the task was enqueued with {headers.get(key)!r}")
    if not spans:
        return out
    trace_id, parent = output.get("trace_id"), output.get("parent_span_id")
    if not isinstance(trace_id, str) or not TRACE_ID.match(trace_id):
        return [*out, f"no valid span is current inside the handler (trace_id {trace_id!r}, P-TEL-3)"]
    if sent is None:  # P-TEL-3: a task without trace context gets a new root span
        if parent:
            out.append(f"the process span of a task without traceparent has parent {parent!r}, expected a new root")
        return out
    parsed = TRACEPARENT.match(sent)
    if parsed is None:  # the scenario's own mistake; the header part above still applies
        return [*out, f"the scenario's traceparent {sent!r} is not a version-00 W3C traceparent"]
    want_trace, want_parent = parsed.groups()
    if trace_id != want_trace:
        out.append(f"the handler's span is in trace {trace_id}, expected the traceparent's {want_trace} (P-TEL-3)")
    if parent != want_parent:
        out.append(
            f"the handler's span has parent {parent!r}, expected the traceparent's span {want_parent} "
            "(the process span is the child of the producer's context, P-TEL-3)"
        )
    return out
