"""A small OTLP/HTTP receiver of our own: collects the spans every process exports to it.

It answers `POST /v1/traces` (protobuf `ExportTraceServiceRequest`, gzip or not, decoded
with the `opentelemetry-proto` package) and keeps each span as a flat `Span`; metrics and
logs are accepted and dropped. JSON-encoded OTLP is refused with 415 and counted in
`refused`, so an exporter sending it shows up as a reason, not as missing spans.
"""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# protobuf SpanKind numbers -> the names docs/protocol.md uses (P-TEL-1, P-TEL-3)
KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


@dataclass
class Span:
    """One received span; ids are lower-case hex, `parent_span_id` is "" for a root."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: str
    service: str
    start_ns: int
    attributes: dict = field(default_factory=dict)
    links: list[tuple[str, str]] = field(default_factory=list)  # (trace id, span id)
    status: str = "UNSET"


def any_value(value):
    """An OTLP AnyValue as a plain Python value."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def decode(body: bytes) -> list[Span]:
    """The spans of one protobuf ExportTraceServiceRequest."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = {kv.key: any_value(kv.value) for kv in resource_spans.resource.attributes}
        service = str(resource.get("service.name", "?"))
        for scope_spans in resource_spans.scope_spans:
            for s in scope_spans.spans:
                spans.append(
                    Span(
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_span_id=s.parent_span_id.hex(),
                        name=s.name,
                        kind=KINDS.get(s.kind, str(s.kind)),
                        service=service,
                        start_ns=s.start_time_unix_nano,
                        attributes={kv.key: any_value(kv.value) for kv in s.attributes},
                        links=[(link.trace_id.hex(), link.span_id.hex()) for link in s.links],
                        status=STATUS.get(s.status.code, str(s.status.code)),
                    )
                )
    return spans


class OtlpReceiver:
    """`ThreadingHTTPServer` on 127.0.0.1 (a free port); `url` is the OTLP endpoint base."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.refused: list[str] = []  # why requests were refused (JSON encoding, bad protobuf)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def snapshot(self) -> list[Span]:
        with self._lock:
            return list(self.spans)

    def wait_until(self, done, timeout_s: float) -> bool:
        """Poll `done(spans)` until it is true or the deadline passes (exporters batch)."""
        deadline = time.monotonic() + timeout_s
        while not done(self.snapshot()):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def _handler(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self._body()
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":  # metrics, logs: accepted, not kept
                    return self._answer(200)
                if "json" in (self.headers.get("Content-Type") or ""):
                    with receiver._lock:
                        receiver.refused.append(f"JSON-encoded OTLP from {self.headers.get('User-Agent')}")
                    return self._answer(415)
                try:
                    spans = decode(body)
                except Exception as err:  # a malformed export is a reason, not a crash
                    with receiver._lock:
                        receiver.refused.append(f"undecodable OTLP from {self.headers.get('User-Agent')}: {err!r}")
                    return self._answer(400)
                with receiver._lock:
                    receiver.spans += spans
                self._answer(200)

            def _body(self) -> bytes:
                """The request body, sent with Content-Length or chunked (Node's exporter does that)."""
                if "chunked" not in (self.headers.get("Transfer-Encoding") or "").lower():
                    return self.rfile.read(int(self.headers.get("Content-Length") or 0))
                chunks = []
                while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()  # the CRLF after each chunk
                while self.rfile.readline().strip():  # trailers, up to the empty line
                    pass
                return b"".join(chunks)

            def _answer(self, status: int) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")  # an empty Export*ServiceResponse
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        return Handler
