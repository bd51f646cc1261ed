// In-memory OpenTelemetry for tests (dev dependencies only): a tracer provider exporting to
// an InMemorySpanExporter, a meter provider read on demand, and the AsyncLocalStorage
// context manager (what a real Node SDK installs) so "current span" works across awaits.
import { context, type Attributes, type HrTime } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  AggregationTemporality, DataPointType, MeterProvider, MetricReader, type DataPoint, type Histogram, type MetricData,
} from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { openTelemetry } from "../../src/otel/index.js";
import type { Telemetry } from "../../src/index.js";

let contextInstalled = false;

/** A MetricReader the test pulls from: collect() when it wants to look. */
class PullReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

export interface TestOtel {
  telemetry: Telemetry;
  tracerProvider: BasicTracerProvider;
  spans(): ReadableSpan[];
  /** All metric streams, by instrument name. */
  metrics(): Promise<Map<string, MetricData>>;
  shutdown(): Promise<void>;
}

/** Fresh providers per call, so tests never see each other's spans or counts. */
export function testOtel(): TestOtel {
  if (!contextInstalled) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    contextInstalled = true;
  }
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new PullReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    telemetry: openTelemetry({ tracerProvider, meterProvider }),
    tracerProvider,
    spans: () => exporter.getFinishedSpans(),
    metrics: async () => {
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length > 0) throw new AggregateError(errors, "metric collection failed");
      const out = new Map<string, MetricData>();
      for (const scope of resourceMetrics.scopeMetrics) {
        if (scope.scope.name !== "orch8") continue; // P-TEL-4: the meter is `orch8`
        for (const m of scope.metrics) out.set(m.descriptor.name, m);
      }
      return out;
    },
    shutdown: async () => {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

const matches = (attrs: Attributes, want: Attributes) => Object.entries(want).every(([k, v]) => attrs[k] === v);

/** Sum (counter) or count (histogram) of the points whose attributes include `want`. */
export function total(m: MetricData | undefined, want: Attributes = {}): number {
  if (!m) return 0;
  let n = 0;
  for (const p of m.dataPoints as DataPoint<number | Histogram>[]) {
    if (!matches(p.attributes, want)) continue;
    n += m.dataPointType === DataPointType.HISTOGRAM ? (p.value as Histogram).count : (p.value as number);
  }
  return n;
}

/** The attribute sets of a metric's points. */
export const attributeSets = (m: MetricData | undefined): Attributes[] => (m?.dataPoints ?? []).map((p) => p.attributes);

export const hrMs = (t: HrTime) => t[0] * 1000 + t[1] / 1e6;
