"""Assembles one task's trace from the spans of three processes and checks that it chains.

The expected shape (docs/protocol.md section 15), for a task on queue `q`:

    <the producer's own span>                       producer
      send q              PRODUCER                  producer       P-TEL-1
        enqueue q                                   orch8-server   P-TEL-2
        claim q                                     orch8-server   P-TEL-2
        process q         CONSUMER  -> link: receive q (CLIENT)    worker   P-TEL-3
        complete q                                  orch8-server   P-TEL-2

Pure functions of the received spans, so the self-test can feed them a broken chain.
"""

from __future__ import annotations

from dataclasses import dataclass

from .otlp import Span

SERVER = "orch8-server"  # P-TEL-2's service name


@dataclass
class Expected:
    """What one SDK's trace must contain."""

    root: Span  # the producer's own span around the enqueue
    queue: str
    task_id: str
    worker_id: str
    worker_service: str  # OTEL_SERVICE_NAME the worker was started with


def check(spans: list[Span], want: Expected) -> list[str]:
    """Reasons the trace is incomplete or does not chain; empty when it is whole."""
    trace = [s for s in spans if s.trace_id == want.root.trace_id]
    q, out = want.queue, []

    def find(name: str, service: str, kind: str | None = None) -> Span | None:
        found = [s for s in trace if s.name == name and s.service == service and (kind is None or s.kind == kind)]
        if not found:
            out.append(f"no `{name}` span{f' ({kind})' if kind else ''} from {service} in trace {want.root.trace_id}")
        return found[0] if found else None

    def parent_is(span: Span | None, parent: Span | None, rule: str) -> None:
        if span and parent and span.parent_span_id != parent.span_id:
            got = next((s.name for s in trace if s.span_id == span.parent_span_id), "a span never received")
            out.append(
                f"`{span.name}` ({span.service}) has parent {span.parent_span_id or 'none'} ({got}), "
                f"expected `{parent.name}` {parent.span_id} ({rule})"
            )

    def attrs(span: Span | None, wanted: dict, rule: str) -> None:
        for key, value in wanted.items():
            if span and span.attributes.get(key) != value:
                got = span.attributes.get(key)
                out.append(f"`{span.name}` ({span.service}) has {key} = {got!r}, expected {value!r} ({rule})")

    send = find(f"send {q}", want.root.service, "PRODUCER")
    parent_is(send, want.root, "P-TEL-1: a child of the caller's current span")
    attrs(
        send,
        {"messaging.system": "orch8", "messaging.destination.name": q, "messaging.message.id": want.task_id},
        "P-TEL-1",
    )
    for op in ("enqueue", "claim", "complete"):
        span = find(f"{op} {q}", SERVER)
        parent_is(span, send, "P-TEL-2: a child of the task's context")
        attrs(span, {"messaging.message.id": want.task_id}, "P-TEL-2")
        if op != "enqueue":
            attrs(span, {"orch8.worker.id": want.worker_id}, "P-TEL-2")
    process = find(f"process {q}", want.worker_service, "CONSUMER")
    parent_is(process, send, "P-TEL-3: the child of the task's traceparent")
    attrs(
        process,
        {"messaging.message.id": want.task_id, "orch8.worker.id": want.worker_id, "orch8.outcome": "completed"},
        "P-TEL-3",
    )
    if process:
        linked = {span_id for _, span_id in process.links}
        receives = [s for s in spans if s.span_id in linked and s.name == f"receive {q}" and s.kind == "CLIENT"]
        if not receives:
            out.append(
                f"`process {q}` links to no `receive {q}` CLIENT span received from {want.worker_service} (P-TEL-3)"
            )
    return out


def render(spans: list[Span], trace_id: str) -> list[str]:
    """The trace as an indented tree (children by start time), with each span's links."""
    trace = sorted((s for s in spans if s.trace_id == trace_id), key=lambda s: s.start_ns)
    ids = {s.span_id for s in trace}
    by_id = {s.span_id: s for s in spans}
    lines = [f"trace {trace_id}"]

    def show(span: Span, depth: int) -> None:
        pad = "  " * depth
        keys = {"messaging.message.id": "task", "orch8.worker.id": "worker", "orch8.outcome": "outcome"}
        extra = " ".join(f"{label}={span.attributes[k]}" for k, label in keys.items() if k in span.attributes)
        orphan = "" if not span.parent_span_id or span.parent_span_id in ids else " (parent never received)"
        lines.append(f"{pad}{span.name}  [{span.service}, {span.kind}] {extra}{orphan}".rstrip())
        for link_trace, link_span in span.links:
            target = by_id.get(link_span)
            what = f"{target.name}  [{target.service}, {target.kind}]" if target else "a span never received"
            lines.append(f"{pad}  ~> link: {what} in trace {link_trace}")
        for child in (s for s in trace if s.parent_span_id == span.span_id):
            show(child, depth + 1)

    for top in (s for s in trace if not s.parent_span_id or s.parent_span_id not in ids):
        show(top, 1)
    return lines
