// The telemetry seam at unit level (issue 18): the core never imports OpenTelemetry, the
// worker calls its Telemetry at the right points (fake recorder and the real OpenTelemetry
// implementation over a routing HTTP mock), and W3C traceparent in headers (P-TEL-1).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { SpanStatusCode, TraceFlags } from "@opentelemetry/api";
import { Orch8Client, Worker, type Telemetry, type TaskTelemetry, type WorkerTelemetry } from "../../src/index.js";
import { extractHeaders, injectHeaders } from "../../src/otel/index.js";
import { json, problem } from "../helpers/mock-fetch.js";
import { testOtel, total } from "../helpers/otel.js";
import { claimed, hangUntilAborted, routed, until, worker } from "../helpers/routed.js";
import { SDK_DIR } from "../helpers/server.js";

/** Every module reachable from `entry` by relative imports, with its bare (package) imports. */
function importGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?from\s+"([^"]+)"|import\(\s*"([^"]+)"\s*\)|require\(\s*"([^"]+)"\s*\)/g)) {
      const spec = (m[1] ?? m[2] ?? m[3])!;
      if (spec.startsWith(".")) visit(resolve(dirname(file), spec.replace(/\.js$/, ".ts")));
      else packages.add(spec);
    }
  };
  visit(entry);
  return { files, packages };
}

test("without telemetry: the core entry never imports @opentelemetry nor the otel subpath (issue 18)", () => {
  const { files, packages } = importGraph(join(SDK_DIR, "src", "index.ts"));
  assert.ok(files.size > 20, `walked ${files.size} modules`);
  assert.ok(packages.has("openapi-fetch"), "the walk sees package imports");
  assert.deepEqual([...packages].filter((p) => p.includes("opentelemetry")), []);
  assert.deepEqual([...files].filter((f) => f.includes(`${join("src", "otel")}`)), []);
  // The otel subpath is the one that does, so the walk can see it.
  assert.ok(importGraph(join(SDK_DIR, "src", "otel", "index.ts")).packages.has("@opentelemetry/api"));
  const pkg = JSON.parse(readFileSync(join(SDK_DIR, "package.json"), "utf8"));
  assert.equal(pkg.dependencies["@opentelemetry/api"], undefined);
  assert.deepEqual(pkg.peerDependenciesMeta["@opentelemetry/api"], { optional: true });
  for (const dep of Object.keys(pkg.dependencies)) assert.ok(!dep.startsWith("@opentelemetry/"), dep);
});

test("P-TEL-1: traceparent and tracestate written and read in W3C format; the caller's traceparent wins", () => {
  const sc = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.SAMPLED };
  assert.deepEqual(injectHeaders({ a: "1" }, sc), { a: "1", traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" });
  assert.deepEqual(injectHeaders(undefined, { ...sc, traceFlags: TraceFlags.NONE }), { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00" });
  const own = { traceparent: "00-11111111111111111111111111111111-2222222222222222-01" };
  assert.deepEqual(injectHeaders(own, sc), own);
  const back = extractHeaders({ traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "k=v,x=y" });
  assert.equal(back?.traceId, sc.traceId);
  assert.equal(back?.spanId, sc.spanId);
  assert.equal(back?.isRemote, true);
  assert.equal(back?.traceState?.serialize(), "k=v,x=y");
  assert.equal(injectHeaders({}, back!).tracestate, "k=v,x=y");
  for (const bad of ["", "junk", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-00000000000000000000000000000000-b7ad6b7169203331-01",
    "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra"]) {
    assert.equal(extractHeaders({ traceparent: bad }), undefined, bad);
  }
  assert.equal(extractHeaders({}), undefined);
});

test("P-TEL-1: the client's enqueue goes through Telemetry.enqueue with headers injected; without it, untouched", async () => {
  const bodies: unknown[] = [];
  const fetch = async (req: Request) => {
    bodies.push(await req.json());
    return json(201, { id: "t_9", headers: {} });
  };
  const tel: Telemetry = {
    enqueue: async (tasks, batch, send) => {
      assert.equal(batch, false);
      assert.deepEqual(await send(tasks.map((t) => ({ ...t, headers: { ...t.headers, traceparent: "tp" } }))), ["t_9"]);
    },
    worker: () => assert.fail("no worker here"),
  };
  const task = await new Orch8Client({ baseUrl: "http://h:1", fetch, telemetry: tel }).enqueue({ handler_name: "h", headers: { x: "1" } });
  assert.equal(task.id, "t_9", "the answer comes back unchanged");
  await new Orch8Client({ baseUrl: "http://h:1", fetch }).enqueue({ handler_name: "h", headers: { x: "1" } });
  assert.deepEqual(bodies, [{ handler_name: "h", headers: { x: "1", traceparent: "tp" } }, { handler_name: "h", headers: { x: "1" } }]);
});

/** A Telemetry that records what the worker reported. */
function recorder() {
  const log: string[] = [];
  const tel: Telemetry = {
    enqueue: () => assert.fail("the worker never enqueues"),
    worker: (info): WorkerTelemetry => {
      log.push(`worker ${info.workerId} ${info.concurrency}`);
      return {
        polled: (_at, tasks) => {
          log.push(`polled ${tasks === undefined ? "error" : tasks.length}`);
          return "link";
        },
        taskStarted: (task, _claimedAt, link): TaskTelemetry => {
          log.push(`started ${task.id} ${String(link)}`);
          return {
            run: (fn) => {
              log.push("run");
              return fn();
            },
            ended: (outcome, code, seconds) => log.push(`ended ${outcome} ${code} ${seconds === undefined ? "-" : "s"}`),
          };
        },
        heartbeat: (ok) => log.push(`heartbeat ${ok}`),
        held: (delta, free) => log.push(`held ${delta} ${free}`),
      };
    },
  };
  return { tel, log };
}

test("P-TEL-3, P-TEL-4: the worker reports polls, heartbeats, runs and a lease loss to its telemetry", async () => {
  const { tel, log } = recorder();
  let lost = false;
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": (_req, n) => (n === 1 ? problem(503, "unavailable")
      : json(200, { directive: "running", heartbeat_interval_ms: 50, tasks: lost ? [{ task_id: "t1", lease_lost: true, cancel_requested: false, lease_expires_at: null }] : [] })),
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1 ? problem(503, "unavailable") : n === 2 ? json(200, { tasks: [claimed("t1", 60_000)], next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false, concurrency: 3, telemetry: tel,
    handlers: { h: (ctx) => new Promise((resolve) => { lost = true; ctx.signal.addEventListener("abort", () => resolve(null)); }) },
  });
  const run = w.run();
  await until(() => w.stats().tasks_lease_lost === 1 && w.stats().in_flight === 0, "the lease loss");
  await w.stop();
  await run;
  assert.deepEqual(log.filter((l) => !l.startsWith("heartbeat") && !l.startsWith("polled 0")), [
    "worker w 3", "polled error", "polled 1", "started t1 link", "held 1 2", "run", "ended lease_lost undefined s", "held -1 3",
  ]);
  assert.ok(log.includes("heartbeat false") && log.includes("heartbeat true"), log.join("; "));
});

test("P-TEL-3, P-TEL-4 on OpenTelemetry: a lease loss ends the process span as lease_lost and counts a lease loss; errors counted", async () => {
  const otel = testOtel();
  let lost = false;
  const m = routed({
    "POST /workers": () => json(200, worker("w")),
    "POST /workers/w/heartbeat": (_req, n) => (n === 1 ? problem(503, "unavailable")
      : json(200, { directive: "running", heartbeat_interval_ms: 50, tasks: lost ? [{ task_id: "t1", lease_lost: true, cancel_requested: false, lease_expires_at: null }] : [] })),
    "POST /workers/tasks/poll/batch": (req, n) => (n === 1 ? problem(503, "unavailable") : n === 2 ? json(200, { tasks: [claimed("t1", 60_000)], next_poll_after_ms: 0 }) : hangUntilAborted(req, n)),
    "DELETE /workers/w": () => json(200, worker("w")),
  });
  const w = new Worker({
    client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false, telemetry: otel.telemetry,
    handlers: { h: (ctx) => new Promise((resolve) => { lost = true; ctx.signal.addEventListener("abort", () => resolve(null)); }) },
  });
  const run = w.run();
  try {
    await until(() => w.stats().tasks_lease_lost === 1 && w.stats().in_flight === 0, "the lease loss");
    const metrics = await otel.metrics();
    const attrs = { "messaging.destination.name": "default", "orch8.handler": "h" };
    assert.equal(total(metrics.get("orch8.worker.lease_losses"), attrs), 1);
    assert.equal(total(metrics.get("orch8.worker.task.duration"), { ...attrs, "orch8.outcome": "lease_lost" }), 1);
    assert.equal(total(metrics.get("orch8.worker.tasks.completed")), 0);
    assert.equal(total(metrics.get("orch8.worker.polls"), { "orch8.outcome": "error" }), 1);
    assert.equal(total(metrics.get("orch8.worker.polls"), { "orch8.outcome": "claimed" }), 1);
    assert.equal(total(metrics.get("orch8.worker.heartbeats"), { "orch8.outcome": "error" }), 1);
    assert.equal(total(metrics.get("orch8.worker.task.schedule_to_start")), 0, "no ready_at (older server): unknown, not recorded");
    const proc = otel.spans().find((s) => s.name === "process default");
    assert.equal(proc?.attributes["orch8.outcome"], "lease_lost");
    assert.notEqual(proc?.status.code, SpanStatusCode.ERROR);
    assert.equal(proc?.parentSpanContext, undefined, "no traceparent: a new root");
  } finally {
    await w.stop();
    await run;
    await otel.shutdown();
  }
});
