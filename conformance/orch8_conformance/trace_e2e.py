"""`python -m orch8_conformance trace`: one OpenTelemetry trace per SDK, from real OTLP (issue 18).

Starts an OTLP/HTTP receiver of our own (otlp.py), the reference server with
`--otlp-endpoint` pointing at it (P-TEL-2), and per SDK: a producer (the Python SDK with its
OpenTelemetry telemetry, exporting OTLP too) that enqueues one `echo` task inside a span of
its own (P-TEL-1), then that SDK's conformance adapter as the worker with ORCH8_TELEMETRY=1
and OTEL_EXPORTER_OTLP_ENDPOINT set (P-TEL-3). It then assembles each task's trace from the
three processes' spans, prints it as an indented tree and fails when a part is missing or
the parents do not chain (trace_tree.py).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from .adapter import AdapterProcess, adapter_env
from .api import Api
from .otlp import OtlpReceiver, Span
from .trace_tree import Expected, check, render

TASK_TIMEOUT_S = 30.0
SPANS_TIMEOUT_S = 15.0
EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "200"}  # batch span processors export within 0.2 s


def producer(endpoint: str):
    """(the Python SDK's telemetry, a tracer for the producer's own span, the provider)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from orch8.otel import OpenTelemetry

    provider = TracerProvider(resource=Resource.create({"service.name": "orch8-e2e-producer"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    return OpenTelemetry(tracer_provider=provider), provider.get_tracer("orch8-conformance"), provider


def as_span(otel_span, service: str) -> Span:
    """The producer's own span as the receiver will see it (for the tree's root)."""
    ids = otel_span.get_span_context()
    return Span(f"{ids.trace_id:032x}", f"{ids.span_id:016x}", "", otel_span.name, "INTERNAL", service, 0)


class TraceRun:
    """One receiver, one server, one producer; `sdk()` runs one SDK's worker against them."""

    def __init__(self, workdir: Path) -> None:
        from orch8 import Orch8Client
        from orch8_server.testing import start_server

        self.workdir = workdir
        self.receiver = OtlpReceiver().start()
        self.server = start_server(
            "--otlp-endpoint", self.receiver.url, "--log-level", "warning",
            db=str(workdir / "orch8.db"), log=workdir / "server.log", env=EXPORT,
        )  # fmt: skip
        self.api = Api(self.server.url)
        telemetry, self.tracer, self.provider = producer(self.receiver.url)
        self.client = Orch8Client(base_url=self.server.url, telemetry=telemetry)

    def close(self) -> None:
        self.client.close()
        self.provider.shutdown()
        self.server.stop(timeout=10)  # the server exports what it still batches
        self.receiver.close()

    def sdk(self, name: str, command: list[str]) -> tuple[Expected | None, list[str]]:
        """Enqueue inside a span, run the adapter until the task completes, stop it."""
        queue, worker_id = f"e2e-{name}", f"e2e-{name}-worker"
        with self.tracer.start_as_current_span(f"e2e {name}") as root:
            task = self.client.enqueue("echo", queue_name=queue, params={"sdk": name})
        want = Expected(as_span(root, "orch8-e2e-producer"), queue, task.id, worker_id, f"orch8-worker-{name}")
        env = adapter_env(self.server.url, worker_id, {"queue": queue, "handlers": ["echo"], "telemetry": True})
        env.update(EXPORT, OTEL_EXPORTER_OTLP_ENDPOINT=self.receiver.url, OTEL_SERVICE_NAME=want.worker_service)
        logs = self.workdir / name
        logs.mkdir(parents=True, exist_ok=True)
        worker = AdapterProcess("w1", worker_id, command, env, logs)
        try:
            status = self._wait_completed(task.id)
            worker.send("SIGTERM")  # run() returns, the adapter flushes its spans and exits
            worker.proc.wait(timeout=20)
        except Exception as err:  # a timeout is this SDK's failure, not the whole run's
            return want, [f"{name}: {err}; worker stderr: {worker.stderr_tail(4)!r}"]
        finally:
            worker.kill()
        if status != "completed":
            return want, [f"{name}: task {task.id} is {status!r}, expected completed; logs in {logs}"]
        return want, []

    def _wait_completed(self, task_id: str) -> str | None:
        deadline = time.monotonic() + TASK_TIMEOUT_S
        status = None
        while time.monotonic() < deadline:
            status = self.api.task(task_id)["status"]
            if status in ("completed", "failed", "cancelled", "expired"):
                return status
            time.sleep(0.1)
        return status


def main(sdks: dict[str, list[str]]) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="orch8-trace-e2e-"))
    print(f"trace-e2e: {', '.join(sdks)}; OTLP receiver, reference server and workers; logs in {workdir}", flush=True)
    run = TraceRun(workdir)
    wanted: dict[str, Expected] = {}
    reasons: dict[str, list[str]] = {}
    try:
        for name, command in sdks.items():
            want, reasons[name] = run.sdk(name, command)
            wanted[name] = want
            run.receiver.wait_until(lambda spans, w=want: not check(spans, w), SPANS_TIMEOUT_S)
    finally:
        run.close()
    spans = run.receiver.snapshot()
    failed = 0
    for name, want in wanted.items():
        found = reasons[name] or check(spans, want)
        print(f"\n{name}: {'FAIL' if found else 'ok'} (task {want.task_id}, worker {want.worker_id})")
        print("\n".join("  " + line for line in render(spans, want.root.trace_id)))
        for reason in found:
            print(f"  - {reason}")
        elsewhere = [s for s in spans if s.service == want.worker_service and s.trace_id != want.root.trace_id]
        for span in elsewhere if found else []:  # where the worker's spans went instead
            print(f"  {want.worker_service} also sent `{span.name}` ({span.kind}) in trace {span.trace_id}")
        failed += bool(found)
    for why in run.receiver.refused:
        print(f"receiver refused: {why}")
    print(f"\n{len(spans)} spans received from {len({s.service for s in spans})} services")
    print(f"trace-e2e: {len(wanted) - failed} passed, {failed} failed")
    if failed:
        print(f"logs: {workdir} (server.log, <sdk>/w1.stderr.log)", file=sys.stderr)
    return 1 if failed else 0
