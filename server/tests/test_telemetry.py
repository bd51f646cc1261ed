"""Server telemetry: task spans (P-TEL-2) and the P-TEL-6 histograms and gauges.

Spans: the app runs in-process (Starlette's TestClient, real SQLite or PostgreSQL) with an
in-memory span exporter injected through create_app's test hook. One test also runs the
real server process with `--otlp-endpoint` against a loopback OTLP/HTTP collector.
Metrics: the shared real server's /metrics, read before and after.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from conftest import REPO, claim, enqueue, eventually, launch, stop_server
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from prometheus_client.parser import text_string_to_metric_families

with warnings.catch_warnings():  # starlette 1.x nudges towards httpx2; httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from orch8_server.config import Settings
from orch8_server.http.app import create_app

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def in_process(
    backend: str, tmp_path: Path, new_database: Callable[[], str]
) -> Iterator[Callable[..., tuple[TestClient, InMemorySpanExporter]]]:
    """Start the app in-process on a fresh database with these Settings, its spans kept
    in memory (create_app's test hook)."""
    with ExitStack() as stack:

        def start(**settings: Any) -> tuple[TestClient, InMemorySpanExporter]:
            db = str(tmp_path / "orch8.db") if backend == "sqlite" else new_database()
            exporter = InMemorySpanExporter()
            app = create_app(Settings(db=db, **settings), span_exporter=exporter)
            return stack.enter_context(TestClient(app)), exporter

        yield start


@pytest.fixture
def traced(
    in_process: Callable[..., tuple[TestClient, InMemorySpanExporter]],
) -> tuple[TestClient, InMemorySpanExporter]:
    return in_process()


def _spans(client: TestClient, exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    client.app.state.engine.spans.flush()  # type: ignore[attr-defined]
    return list(exporter.get_finished_spans())


def _traced_task(client: TestClient, handler: str, queue: str, **fields: Any) -> dict:
    response = client.post(
        "/tasks",
        json={"handler_name": handler, "queue_name": queue, **fields,
              "headers": {"traceparent": TRACEPARENT, "tracestate": "k=v"}},
    )  # fmt: skip
    assert response.status_code == 201, response.text
    return response.json()


def _poll(client: TestClient, handler: str, queue: str, n: int = 1) -> list[dict]:
    response = client.post(
        "/workers/tasks/poll/batch",
        json={"handler_names": [handler], "queue_name": queue, "batch_size": n, "wait_ms": 0,
              "worker_id": "w-1"},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    return list(response.json()["tasks"])


def _assert_child_of_task(span: ReadableSpan, name: str, task: dict, attempt: int) -> None:
    assert span.name == name
    assert span.kind == SpanKind.INTERNAL
    assert span.context is not None and span.parent is not None
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert format(span.parent.span_id, "016x") == PARENT_ID  # the task's context
    attrs = dict(span.attributes or {})
    assert attrs["messaging.message.id"] == task["id"]
    assert attrs["orch8.handler"] == task["handler_name"]
    assert attrs["orch8.attempt"] == attempt
    assert attrs["messaging.destination.name"] == task["queue_name"]
    assert attrs["messaging.system"] == "orch8"
    assert span.start_time is not None and span.end_time is not None
    assert span.start_time <= span.end_time


def test_p_tel_2_a_traced_task_has_enqueue_claim_complete_spans(traced: Any, name: str) -> None:
    """P-TEL-2: enqueue, claim and complete of a task with a traceparent are spans of its
    trace, children of its context, with the task's attributes (worker on claim/result)."""
    client, exporter = traced
    task = _traced_task(client, name, "q-span")
    (claimed,) = _poll(client, name, "q-span")
    done = client.post(
        f"/workers/tasks/{task['id']}/complete",
        json={"lease_id": claimed["lease"]["id"], "output": {}},
    )
    assert done.status_code == 200, done.text
    spans = {s.name: s for s in _spans(client, exporter)}
    assert set(spans) == {"enqueue q-span", "claim q-span", "complete q-span"}
    _assert_child_of_task(spans["enqueue q-span"], "enqueue q-span", task, 0)
    _assert_child_of_task(spans["claim q-span"], "claim q-span", task, 1)
    _assert_child_of_task(spans["complete q-span"], "complete q-span", task, 1)
    assert "orch8.worker.id" not in (spans["enqueue q-span"].attributes or {})
    for op in ("claim", "complete"):
        assert (spans[f"{op} q-span"].attributes or {})["orch8.worker.id"] == "w-1"
    # The server's clock orders them: enqueued before claimed before completed.
    order = [spans[f"{op} q-span"].start_time or 0 for op in ("enqueue", "claim", "complete")]
    assert order == sorted(order)


def test_p_tel_2_failures_and_batches_have_fail_and_complete_spans(traced: Any, name: str) -> None:
    """P-TEL-2: a re-queued failure, a batch failure and a batch completion are spans too;
    a failure's span has status ERROR and its code as error.type."""
    client, exporter = traced
    tasks = [_traced_task(client, name, "q-b", retry={"max_attempts": 2}) for _ in range(3)]
    claimed = {t["id"]: t for t in _poll(client, name, "q-b", 3)}
    first, second, third = (claimed[t["id"]] for t in tasks)
    failed = client.post(
        f"/workers/tasks/{first['id']}/fail",
        json={"lease_id": first["lease"]["id"], "error": "boom", "code": "E_ONE",
              "retryable": True, "retry_after_ms": 60000},
    )  # fmt: skip
    assert failed.status_code == 200, failed.text
    batch_fail = client.post(
        "/workers/tasks/fail/batch",
        json={"items": [{"task_id": second["id"], "lease_id": second["lease"]["id"],
                         "error": "bad", "code": "E_TWO"}]},
    )  # fmt: skip
    assert batch_fail.status_code == 200, batch_fail.text
    batch_done = client.post(
        "/workers/tasks/complete/batch",
        json={"items": [{"task_id": third["id"], "lease_id": third["lease"]["id"]}]},
    )
    assert batch_done.status_code == 200, batch_done.text
    by_task: dict[tuple[str, str], ReadableSpan] = {}
    for span in _spans(client, exporter):
        by_task[(span.name, str((span.attributes or {})["messaging.message.id"]))] = span
    one = by_task[("fail q-b", first["id"])]
    two = by_task[("fail q-b", second["id"])]
    _assert_child_of_task(one, "fail q-b", tasks[0], 1)
    _assert_child_of_task(two, "fail q-b", tasks[1], 1)
    assert one.status.status_code == StatusCode.ERROR
    assert (one.attributes or {})["error.type"] == "E_ONE"
    assert (one.attributes or {})["orch8.outcome"] == "requeued"
    assert (two.attributes or {})["error.type"] == "E_TWO"
    assert (two.attributes or {})["orch8.outcome"] == "failed"
    _assert_child_of_task(by_task[("complete q-b", third["id"])], "complete q-b", tasks[2], 1)
    assert len(by_task) == 3 * 3  # enqueue, claim and one result each


def test_p_tel_2_a_task_without_traceparent_has_no_span(traced: Any, name: str) -> None:
    """P-TEL-2: only tasks carrying a traceparent are recorded."""
    client, exporter = traced
    response = client.post("/tasks", json={"handler_name": name, "headers": {"x": "y"}})
    assert response.status_code == 201, response.text
    (claimed,) = _poll(client, name, "default")
    done = client.post(
        f"/workers/tasks/{claimed['id']}/complete", json={"lease_id": claimed["lease"]["id"]}
    )
    assert done.status_code == 200, done.text
    assert _spans(client, exporter) == []


def test_p_tel_2_without_an_endpoint_opentelemetry_is_never_imported(tmp_path: Path) -> None:
    """P-TEL-2: no endpoint, no exporter: the server (app, claim, complete) never imports
    OpenTelemetry and holds no span recorder."""
    script = f"""
import sys
import warnings
warnings.simplefilter("ignore")
from starlette.testclient import TestClient
from orch8_server.config import Settings
from orch8_server.http.app import create_app
app = create_app(Settings(db={str(tmp_path / "o.db")!r}))
with TestClient(app) as c:
    c.post("/tasks", json={{"handler_name": "h", "headers": {{"traceparent": {TRACEPARENT!r}}}}})
    t = c.post("/workers/tasks/poll", json={{"wait_ms": 0}}).json()
    c.post(f"/workers/tasks/{{t['id']}}/complete", json={{"lease_id": t["lease"]["id"]}})
assert app.state.engine.spans is None
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


class _Collector(BaseHTTPRequestHandler):
    bodies: ClassVar[list[tuple[str, bytes, str]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        self.bodies.append((self.path, body, self.headers["content-type"]))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_p_tel_2_the_server_exports_spans_by_otlp_http(
    backend: str, tmp_path: Path, new_database: Callable[[], str], name: str
) -> None:
    """P-TEL-2 end to end: `--otlp-endpoint` sends protobuf spans to <endpoint>/v1/traces
    with service.name from OTEL_SERVICE_NAME."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    _Collector.bodies = []
    collector = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    db = str(tmp_path / "o.db") if backend == "sqlite" else new_database()
    server = launch(
        db, tmp_path / "o.log", **{"otlp-endpoint": f"http://127.0.0.1:{collector.server_port}"}
    )
    try:
        with httpx.Client(base_url=server.url, timeout=20) as api:
            enqueue(api, name, headers={"traceparent": TRACEPARENT})
            claim(api, name)
    finally:
        stop_server(server)  # the shutdown exports what is buffered
        collector.shutdown()
    names, services = set(), set()
    for path, body, content_type in _Collector.bodies:
        assert path == "/v1/traces" and content_type == "application/x-protobuf"
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            for attr in resource_spans.resource.attributes:
                if attr.key == "service.name":
                    services.add(attr.value.string_value)
            for scope in resource_spans.scope_spans:
                names |= {s.name for s in scope.spans if s.trace_id.hex() == TRACE_ID}
    assert names == {"enqueue default", "claim default"}
    assert services == {"orch8-server"}


# P-TEL-6 metrics ----------------------------------------------------------------------------


def _samples(api: httpx.Client) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = api.get("/metrics")
    assert response.status_code == 200, response.text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def _value(samples: dict, metric: str, **labels: str) -> float:
    return float(samples.get((metric, frozenset(labels.items())), 0.0))


def test_p_tel_6_histograms_count_claims_results_and_requests(api: httpx.Client, name: str) -> None:
    """P-TEL-6: after N claims, k completions and N-k failures, queue wait counts N,
    run time counts k completed and N-k failed, request durations count each call."""
    before = _samples(api)
    n, k = 4, 3
    for _ in range(n):
        enqueue(api, name, retry={"max_attempts": 1})
    tasks = [claim(api, name, worker_id="w") for _ in range(n)]
    for t in tasks[:k]:
        r = api.post(f"/workers/tasks/{t['id']}/complete", json={"lease_id": t["lease"]["id"]})
        assert r.status_code == 200, r.text
    for t in tasks[k:]:
        r = api.post(
            f"/workers/tasks/{t['id']}/fail", json={"lease_id": t["lease"]["id"], "error": "x"}
        )
        assert r.status_code == 200, r.text
    after = _samples(api)
    pair = {"tenant": "default", "queue": "default", "handler": name}  # P-TEN-4
    assert _value(after, "orch8_task_queue_wait_seconds_count", **pair) == n
    assert _value(after, "orch8_task_run_seconds_count", **pair, outcome="completed") == k
    assert _value(after, "orch8_task_run_seconds_count", **pair, outcome="failed") == n - k
    assert _value(after, "orch8_task_run_seconds_count", **pair, outcome="requeued") == 0

    def moved(op: str) -> float:
        metric = "orch8_request_duration_seconds_count"
        return _value(after, metric, operation=op) - _value(before, metric, operation=op)

    assert moved("enqueueTask") >= n and moved("pollTask") >= n
    assert moved("completeTask") >= k and moved("failTask") >= n - k
    # Buckets cover ms to minutes: the +Inf bucket equals the count.
    inf = _value(after, "orch8_task_queue_wait_seconds_bucket", **pair, le="+Inf")
    assert inf == n


def test_p_tel_6_queue_wait_starts_at_ready_at(api: httpx.Client, name: str) -> None:
    """P-TEL-6: a delayed task's queue wait is from its ready_at (run_at), not created_at."""
    enqueue(api, name, delay_ms=400)
    response = api.post("/workers/tasks/poll", json={"handler_names": [name], "wait_ms": 5000})
    assert response.status_code == 200, response.text
    samples = _samples(api)
    pair = {"tenant": "default", "queue": "default", "handler": name}  # P-TEN-4
    assert _value(samples, "orch8_task_queue_wait_seconds_count", **pair) == 1
    assert _value(samples, "orch8_task_queue_wait_seconds_sum", **pair) < 0.35


def test_p_tel_6_gauges_oldest_pending_age_and_workers(in_process: Any, name: str) -> None:
    """P-TEL-6: orch8_queue_oldest_pending_age_seconds{tenant,queue} grows while a task waits and
    drops to 0 when it is claimed; orch8_workers{tenant,state} counts registered workers by state
    (a worker that falls silent turns dead; a deregistered one is deleted)."""
    api, _ = in_process(reaper_interval_ms=50, heartbeat_interval_ms=200, dead_after_ms=800)
    queue = f"{name}-q"
    enqueue(api, name, queue_name=queue)
    age = "orch8_queue_oldest_pending_age_seconds"
    eventually(lambda: _value(_samples(api), age, tenant="default", queue=queue) >= 0.3)
    claim(api, name, queue_name=queue)
    assert _value(_samples(api), age, tenant="default", queue=queue) == 0

    workers = "orch8_workers"
    assert _value(_samples(api), workers, tenant="default", state="running") == 0
    for worker in ("w-silent", "w-gone"):
        registered = api.post("/workers", json={"worker_id": worker, "handlers": [name]})
        assert registered.status_code in (200, 201), registered.text
    assert _value(_samples(api), workers, tenant="default", state="running") == 2
    assert api.delete("/workers/w-gone").status_code == 200
    eventually(
        lambda: _value(_samples(api), workers, tenant="default", state="dead") == 1, timeout=10
    )
    final = _samples(api)
    assert _value(final, workers, tenant="default", state="running") == 0
    assert _value(final, workers, tenant="default", state="deregistered") == 0


def test_p_tel_6_lean_histogram_renders_as_prometheus_client_does() -> None:
    """P-TEL-6: the lock-free histogram of the hot paths renders the same buckets, sum
    and count as prometheus_client's Histogram for the same observations (bounds included)."""
    import random

    from prometheus_client import CollectorRegistry, Histogram

    from orch8_server.histograms import LeanHistogram
    from orch8_server.metrics import BUCKETS

    ours, theirs = CollectorRegistry(), CollectorRegistry()
    lean = LeanHistogram("h_seconds", "d", ("queue",), BUCKETS, ours)
    reference = Histogram("h_seconds", "d", ("queue",), buckets=BUCKETS, registry=theirs)
    rng = random.Random(7)
    values = [*BUCKETS, 0.0, 5000.0, *(rng.uniform(0, 700) for _ in range(300))]
    for v in values:
        lean.labels("q").observe(v)
        reference.labels("q").observe(v)

    def samples(registry: CollectorRegistry) -> dict[tuple[str, str], float]:
        return {
            (s.name, s.labels.get("le", "")): s.value
            for family in registry.collect()
            for s in family.samples
            if not s.name.endswith("_created")
        }

    got, want = samples(ours), samples(theirs)
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value), key
