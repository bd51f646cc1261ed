// The README's Telemetry example in TypeScript, type-checked by `make lint`. Needs
// @opentelemetry/api in your project and, to export anything, an OpenTelemetry SDK started
// first (README "See a trace").
// Run: ORCH8_URL=http://localhost:3001 npx tsx examples/telemetry.ts
import { Orch8Client, Worker, type TaskContext } from "@orch8/sdk";
import { openTelemetry } from "@orch8/sdk/otel";
import { trace } from "@opentelemetry/api";

async function main() {
  const telemetry = openTelemetry();

  // Producer: a PRODUCER span `send <queue>`; its traceparent goes into the task's headers.
  const client = new Orch8Client({ telemetry });
  await client.enqueue({ handler_name: "word_count", params: { text: "hello traced world" } });

  // Worker: each handler runs in its CONSUMER span `process <queue>`, current while it runs.
  const worker = new Worker({
    telemetry,
    healthPort: 0, // GET /health on 127.0.0.1 (P-TEL-5); see worker.healthAddress
    handlers: {
      word_count: (ctx: TaskContext) =>
        trace.getTracer("my-app").startActiveSpan("count", (span) => {
          try {
            span.setAttribute("app.traceparent", ctx.headers.traceparent ?? ""); // as the producer sent it
            return { words: String(ctx.params.text).split(/\s+/).filter(Boolean).length };
          } finally {
            span.end();
          }
        }),
    },
  });
  await worker.run();
}

main(); // no top-level await (CommonJS has none); a rejection ends the process with its error
