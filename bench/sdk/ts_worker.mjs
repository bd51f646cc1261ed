// The TypeScript SDK's Worker with a no-op handler, as a user would run it.
// Usage: node ts_worker.mjs URL CONCURRENCY [HANDLER]  (stops on SIGTERM)
// Every 100th handler call prints the count so far on stdout: the bench follows a drain
// by it, instead of asking the server (orch8bench/sdks.py).
// ORCH8_BENCH_SLEEP_MS=M: each call first sleeps a uniform random 0..M ms, the handler
// shape under which orch8bench/requests.py counts each SDK's requests (issue 32).
// ORCH8_TS_SDK: the SDK's built entry point (default ../../sdk-typescript/dist/index.js;
// orch8bench/before.py points it at the SDK as it was before issue 18).
//
// ORCH8_TELEMETRY=1 passes openTelemetry() of "@orch8/sdk/otel" (issue 18) on the
// OpenTelemetry SDK's own providers (bench/node/package.json pins them): spans through a
// BatchSpanProcessor into an exporter that drops them, metrics aggregated by a reader that
// is never read, AsyncLocalStorage as the context manager. That is the SDK's
// instrumentation cost without a network exporter's.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const entry = process.env.ORCH8_TS_SDK ? pathToFileURL(process.env.ORCH8_TS_SDK).href : "../../sdk-typescript/dist/index.js";
const { Worker } = await import(entry);

const [baseUrl, concurrency, handler = "noop"] = process.argv.slice(2);

async function telemetry() {
  if (process.env.ORCH8_TELEMETRY !== "1") return undefined;
  const require = createRequire(new URL("../node/package.json", import.meta.url));
  const { context } = require("@opentelemetry/api");
  const { AsyncLocalStorageContextManager } = require("@opentelemetry/context-async-hooks");
  const { BasicTracerProvider, BatchSpanProcessor } = require("@opentelemetry/sdk-trace-base");
  const { MeterProvider, MetricReader } = require("@opentelemetry/sdk-metrics");
  const { openTelemetry } = await import("../../sdk-typescript/dist/otel/index.js");

  class NeverRead extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  const dropSpans = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropSpans)] });
  const meterProvider = new MeterProvider({ readers: [new NeverRead()] });
  return openTelemetry({ tracerProvider, meterProvider });
}

const tel = await telemetry();
const sleepMs = Number(process.env.ORCH8_BENCH_SLEEP_MS ?? 0);
let handled = 0;
// As the README's first example: the Worker makes its own client from ORCH8_URL (with the
// telemetry option too), so the bench measures the transport a Worker picks for itself.
process.env.ORCH8_URL = baseUrl;
const worker = new Worker({
  workerId: `bench-ts-${handler}`,
  concurrency: Number(concurrency),
  ...(tel ? { telemetry: tel } : {}),
  handlers: {
    async [handler]() {
      if (sleepMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * sleepMs));
      if (++handled % 100 === 0) process.stdout.write(`${handled}\n`);
      return null;
    },
  },
});
await worker.run();
