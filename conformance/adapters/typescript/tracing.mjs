// ORCH8_TELEMETRY=1: the TypeScript SDK's telemetry object for the adapter's worker (P-TEL-3).
// A tracer provider of the adapter's own with an AsyncLocalStorage context manager (so the
// process span is current inside the handler); no exporter unless OTEL_EXPORTER_OTLP_ENDPOINT
// is set (the end-to-end trace test), then OTLP/HTTP protobuf to it. The OpenTelemetry
// packages (this folder's package.json) are loaded only when telemetry is on.
const env = process.env;
export const enabled = Boolean(env.ORCH8_TELEMETRY);
let api;

/** { telemetry, provider } (both undefined when telemetry is off). */
export async function build() {
  if (!enabled) return {};
  api = await import("@opentelemetry/api");
  const { AsyncLocalStorageContextManager } = await import("@opentelemetry/context-async-hooks");
  const { BasicTracerProvider, BatchSpanProcessor } = await import("@opentelemetry/sdk-trace-base");
  const { resourceFromAttributes } = await import("@opentelemetry/resources");
  const { openTelemetry } = await import("../../../sdk-typescript/dist/otel/index.js");
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  // Export failures and SDK warnings go to stderr (console.warn / console.error), never stdout.
  api.diag.setLogger(new api.DiagConsoleLogger(), api.DiagLogLevel[(env.OTEL_LOG_LEVEL || "warn").toUpperCase()] ?? api.DiagLogLevel.WARN);
  const spanProcessors = [];
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT) {
    const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-proto");
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  }
  const resource = resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME || "orch8-conformance-typescript" });
  const provider = new BasicTracerProvider({ resource, spanProcessors });
  return { telemetry: openTelemetry({ tracerProvider: provider }), provider };
}

/** [trace id, parent span id] of the span current inside the handler; nulls when there is none. */
export function currentSpanIds() {
  const span = enabled ? api.trace.getActiveSpan() : undefined;
  const ids = span?.spanContext();
  if (!ids || !api.isSpanContextValid(ids)) return [null, null];
  return [ids.traceId, span.parentSpanContext?.spanId ?? null];
}
