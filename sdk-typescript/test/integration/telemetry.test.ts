// Issue 18 against the REAL reference server: one trace from a producer's enqueue, through
// the server (task headers), to the worker's handler span (P-TEL-1, P-TEL-3), and the
// worker metrics moving by exactly the right counts (P-TEL-4).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { Orch8Client, PermanentError, type TaskContext } from "../../src/index.js";
import { attributeSets, testOtel, total, type TestOtel } from "../helpers/otel.js";
import { TestServer, waitFor } from "../helpers/server.js";
import { startWorker } from "../helpers/workers.js";

let server: TestServer;
let plain: Orch8Client;

before(async () => {
  server = await TestServer.start();
  plain = server.client();
});
after(async () => server?.dispose());

const settled = (id: string) =>
  waitFor(async () => {
    const t = await plain.getTask(id);
    return t.status === "completed" || t.status === "failed" ? t : undefined;
  }, `task ${id} to finish`, 20_000);

const named = (otel: TestOtel, name: string) => otel.spans().filter((s) => s.name === name);
const processOf = (otel: TestOtel, taskId: string) =>
  waitFor(() => otel.spans().find((s) => s.name.startsWith("process ") && s.attributes["messaging.message.id"] === taskId), `the process span of ${taskId}`);
const parentId = (s: ReadableSpan) => s.parentSpanContext?.spanId;

test("P-TEL-1, P-TEL-3: one trace from the producer's span through the server to the handler's spans", async () => {
  const otel = testOtel();
  const tracer = otel.tracerProvider.getTracer("test");
  const producer = server.client({ telemetry: otel.telemetry });
  const seen: { traceparent?: string; activeSpanId?: string } = {};
  const w = startWorker(server, {
    telemetry: otel.telemetry,
    queueName: "tel_q",
    handlers: {
      tel_ok: (ctx: TaskContext) => {
        seen.traceparent = ctx.headers.traceparent;
        seen.activeSpanId = trace.getActiveSpan()?.spanContext().spanId;
        // A span the handler makes is a child of the process span.
        return tracer.startActiveSpan("inner work", (inner) => {
          inner.end();
          return { ok: true };
        });
      },
      tel_bad: () => {
        throw new PermanentError("no such customer", { code: "bad_input" });
      },
    },
  });
  try {
    const parent = tracer.startSpan("checkout");
    const task = await context.with(trace.setSpan(context.active(), parent),
      () => producer.enqueue({ handler_name: "tel_ok", queue_name: "tel_q", params: {} }));
    parent.end();
    assert.equal((await settled(task.id)).status, "completed");
    const proc = await processOf(otel, task.id);

    const send = named(otel, "send tel_q");
    assert.equal(send.length, 1);
    const [s] = send;
    assert.equal(s!.kind, SpanKind.PRODUCER);
    assert.equal(parentId(s!), parent.spanContext().spanId, "send is a child of the caller's span");
    assert.deepEqual(
      { ...s!.attributes },
      { "messaging.system": "orch8", "messaging.operation.type": "send", "messaging.destination.name": "tel_q", "messaging.message.id": task.id },
    );
    const traceId = parent.spanContext().traceId;
    const want = `00-${traceId}-${s!.spanContext().spanId}-01`;
    // The server stores the headers as sent; the handler sees them as received.
    assert.equal((await plain.getTask(task.id)).headers.traceparent, want);
    assert.equal(seen.traceparent, want);

    assert.equal(proc.kind, SpanKind.CONSUMER);
    assert.equal(proc.name, "process tel_q");
    assert.equal(proc.spanContext().traceId, traceId, "one trace from producer to handler");
    assert.equal(parentId(proc), s!.spanContext().spanId, "process is the child of the send span (through the headers)");
    assert.equal(seen.activeSpanId, proc.spanContext().spanId, "the process span is current in the handler");
    assert.deepEqual({ ...proc.attributes }, {
      "messaging.system": "orch8", "messaging.operation.type": "process", "messaging.destination.name": "tel_q",
      "messaging.message.id": task.id, "orch8.handler": "tel_ok", "orch8.attempt": 1, "orch8.worker.id": w.worker.workerId,
      "orch8.outcome": "completed",
    });
    assert.notEqual(proc.status.code, SpanStatusCode.ERROR);

    const inner = named(otel, "inner work")[0];
    assert.ok(inner, "the handler's span was exported");
    assert.equal(parentId(inner), proc.spanContext().spanId, "the handler's span is a child of the process span");
    assert.equal(inner.spanContext().traceId, traceId);

    const receive = named(otel, "receive tel_q");
    assert.equal(proc.links.length, 1, "process links to its poll");
    const linked = receive.find((r) => r.spanContext().spanId === proc.links[0]!.context.spanId);
    assert.ok(linked, "the link points at an exported receive span");
    assert.equal(linked.kind, SpanKind.CLIENT);
    assert.equal(linked.attributes["messaging.destination.name"], "tel_q");

    // A failing handler: status ERROR and error.type = the failure code.
    const bad = await producer.enqueue({ handler_name: "tel_bad", queue_name: "tel_q", params: {} });
    assert.equal((await settled(bad.id)).status, "failed");
    const failed = await processOf(otel, bad.id);
    assert.equal(failed.status.code, SpanStatusCode.ERROR);
    assert.equal(failed.attributes["error.type"], "bad_input");
    assert.equal(failed.attributes["orch8.outcome"], "failed");
    assert.equal(parentId(named(otel, "send tel_q").find((x) => x.attributes["messaging.message.id"] === bad.id)!), undefined, "no caller span: send is a root");
  } finally {
    await w.close();
    await otel.shutdown();
  }
});

test("P-TEL-1: a batch gets one send span and every task its traceparent; the caller's own traceparent wins", async () => {
  const otel = testOtel();
  const producer = server.client({ telemetry: otel.telemetry });
  const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  const tasks = await producer.enqueueBatch([
    { handler_name: "tel_none", queue_name: "tel_b", params: {} },
    { handler_name: "tel_none", queue_name: "tel_b", params: {}, headers: { traceparent: own, who: "caller" } },
  ]);
  const [send] = named(otel, "send tel_b");
  assert.ok(send);
  assert.equal(send.attributes["messaging.batch.message_count"], 2);
  assert.equal(send.attributes["messaging.message.id"], undefined);
  const [first, second] = await Promise.all(tasks.map((t) => plain.getTask(t.id)));
  assert.equal(first!.headers.traceparent, `00-${send.spanContext().traceId}-${send.spanContext().spanId}-01`);
  assert.deepEqual(first!.headers.tracestate, undefined, "no tracestate when empty");
  assert.deepEqual(second!.headers, { traceparent: own, who: "caller" });

  // The worker continues the caller's trace, not the send span's.
  const w = startWorker(server, { telemetry: otel.telemetry, queueName: "tel_b", handlers: { tel_none: () => null } });
  try {
    const proc = await processOf(otel, second!.id);
    assert.equal(proc.spanContext().traceId, "0af7651916cd43dd8448eb211c80319c");
    assert.equal(parentId(proc), "b7ad6b7169203331");
  } finally {
    await w.close();
    await otel.shutdown();
  }
});

test("P-TEL-3: a task without traceparent gets a new root process span", async () => {
  const otel = testOtel();
  const t = await plain.enqueue({ handler_name: "tel_root", queue_name: "tel_r", params: {} });
  assert.equal(t.headers.traceparent, undefined, "a client without telemetry adds no headers");
  const w = startWorker(server, { telemetry: otel.telemetry, queueName: "tel_r", handlers: { tel_root: () => 1 } });
  try {
    const proc = await processOf(otel, t.id);
    assert.equal(proc.parentSpanContext, undefined);
    assert.equal(named(otel, "send tel_r").length, 0);
  } finally {
    await w.close();
    await otel.shutdown();
  }
});

test("P-TEL-4: after N completions and M failures the instruments moved by exactly N and M", async () => {
  const N = 4;
  const M = 3;
  const otel = testOtel();
  let readyAtSent = 0;
  const w = startWorker(server, {
    telemetry: otel.telemetry,
    queueName: "tel_m",
    concurrency: 5,
    handlers: {
      tel_good: (ctx: TaskContext) => {
        if (ctx.task.ready_at !== undefined) readyAtSent++;
        return ctx.params;
      },
      tel_boom: (ctx: TaskContext) => {
        if (ctx.task.ready_at !== undefined) readyAtSent++;
        throw new PermanentError("boom", { code: "boom" });
      },
    },
  });
  try {
    const tasks = await plain.enqueueBatch([
      ...Array.from({ length: N }, (_, i) => ({ handler_name: "tel_good", queue_name: "tel_m", params: { i } })),
      ...Array.from({ length: M }, (_, i) => ({ handler_name: "tel_boom", queue_name: "tel_m", params: { i } })),
    ]);
    await Promise.all(tasks.map((t) => settled(t.id)));
    await waitFor(() => w.worker.stats().tasks_completed + w.worker.stats().tasks_failed === N + M && w.worker.stats().in_flight === 0, "all results acknowledged");
    // Heartbeats every 300 ms on this server: wait until one was counted.
    await waitFor(async () => total((await otel.metrics()).get("orch8.worker.heartbeats"), { "orch8.outcome": "ok" }) >= 1, "a heartbeat counted");
    const m = await otel.metrics();
    const good = { "messaging.destination.name": "tel_m", "orch8.handler": "tel_good" };
    const boom = { "messaging.destination.name": "tel_m", "orch8.handler": "tel_boom" };

    assert.equal(total(m.get("orch8.worker.task.duration"), { ...good, "orch8.outcome": "completed" }), N);
    assert.equal(total(m.get("orch8.worker.task.duration"), { ...boom, "orch8.outcome": "failed" }), M);
    assert.equal(total(m.get("orch8.worker.task.duration")), N + M);
    assert.equal(total(m.get("orch8.worker.tasks.completed"), good), N);
    assert.equal(total(m.get("orch8.worker.tasks.completed")), N);
    assert.equal(total(m.get("orch8.worker.tasks.failed"), { ...boom, "error.type": "boom" }), M);
    assert.equal(total(m.get("orch8.worker.tasks.failed")), M);
    assert.equal(total(m.get("orch8.worker.lease_losses")), 0);
    // Absent ready_at (an older server) is unknown and records nothing.
    assert.equal(total(m.get("orch8.worker.task.schedule_to_start")), readyAtSent);
    if (readyAtSent > 0) assert.equal(readyAtSent, N + M);
    const claimedPolls = total(m.get("orch8.worker.polls"), { "orch8.outcome": "claimed" });
    assert.ok(claimedPolls >= 1 && claimedPolls <= N + M, `claimed polls ${claimedPolls}`);
    // Every poll sent is counted once answered or failed; only the one in flight is not yet.
    const polls = total(m.get("orch8.worker.polls"));
    assert.ok(polls >= w.worker.stats().polls - 1 && polls <= w.worker.stats().polls, `polls ${polls} vs stats ${w.worker.stats().polls}`);
    for (const attrs of attributeSets(m.get("orch8.worker.polls"))) assert.ok(["claimed", "empty", "error"].includes(String(attrs["orch8.outcome"])));
    assert.equal(total(m.get("orch8.worker.tasks.in_flight")), 0, "in_flight back to 0");
    const free = m.get("orch8.worker.slots.free")!.dataPoints;
    assert.equal(free.length, 1);
    assert.equal(free[0]!.value, 5, "all slots free again");
    assert.deepEqual(m.get("orch8.worker.task.duration")!.descriptor.unit, "s");
    assert.deepEqual(m.get("orch8.worker.tasks.completed")!.descriptor.unit, "{task}");
  } finally {
    await w.close();
    await otel.shutdown();
  }
});
