"""The Python SDK's Worker with a no-op handler, as a user would run it.
Usage: python py_worker.py URL CONCURRENCY [HANDLER]  (stops on SIGTERM)

Every 100th handler call prints the count so far on stdout: the bench follows a drain by
it, instead of asking the server (orch8bench/sdks.py).

ORCH8_BENCH_SLEEP_MS=M makes each call sleep a uniform random 0..M ms first, and
ORCH8_BENCH_SYNC=1 makes the handler a plain function, run in the worker's threads: the
handler shapes under which orch8bench/requests.py counts each SDK's requests (issue 32).

ORCH8_TELEMETRY=1 passes `orch8.otel.OpenTelemetry` (issue 18) on the OpenTelemetry SDK's
own providers: spans through a BatchSpanProcessor into an exporter that drops them, metrics
aggregated by an in-memory reader that is never read. That is the SDK's instrumentation
cost (spans, attributes, histograms) without a network exporter's.
"""

import asyncio
import itertools
import os
import random
import sys
import time

from orch8 import Worker


def telemetry():
    """The telemetry object of ORCH8_TELEMETRY=1, else None (the SDK makes no OTel call)."""
    if os.environ.get("ORCH8_TELEMETRY") != "1":
        return None
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )
    from orch8.otel import OpenTelemetry

    class DropSpans(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(DropSpans()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return OpenTelemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)


handler = sys.argv[3] if len(sys.argv) > 3 else "noop"
worker = Worker(
    base_url=sys.argv[1],
    concurrency=int(sys.argv[2]),
    worker_id=f"bench-py-{handler}",
    **({"telemetry": tel} if (tel := telemetry()) is not None else {}),
)


SLEEP_S = float(os.environ.get("ORCH8_BENCH_SLEEP_MS", "0")) / 1000
calls = itertools.count(1)  # next() is atomic: sync handlers count from many threads


def counted() -> None:
    n = next(calls)
    if n % 100 == 0:
        sys.stdout.write(f"{n}\n")  # one write: lines of two threads never mix
        sys.stdout.flush()


if os.environ.get("ORCH8_BENCH_SYNC") == "1":

    @worker.handler(handler)
    def sync_handler(ctx):
        if SLEEP_S:
            time.sleep(random.random() * SLEEP_S)
        counted()

else:

    @worker.handler(handler)
    async def noop(ctx):
        if SLEEP_S:
            await asyncio.sleep(random.random() * SLEEP_S)
        counted()


if __name__ == "__main__":
    worker.run()
