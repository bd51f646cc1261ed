// Failure reports always land (P-SDK-27), configuration errors stop the worker (P-SDK-28),
// shutdown wording (P-SDK-29) and log lines that say why (P-SDK-22), on a routing fetch mock.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  NotFoundError, Orch8Client, Orch8Error, PermanentError, Worker, type Logger, type WorkerOptions,
} from "../../src/index.js";
import { boundDetails, boundMessage, utf8Prefix } from "../../src/worker/bound.js";
import { json, problem, refused } from "../helpers/mock-fetch.js";
import { batchAnswer, claimed, hangUntilAborted, item, routed, until, worker, type Route } from "../helpers/routed.js";

const bytes = (s: string) => Buffer.byteLength(s, "utf8");
const outcome = (id: string) => ({ task_id: id, status: "failed", attempt: 1, attempts_left: 0, next_attempt_at: null, error_code: "x" });
const base = (poll: Route, extra: Record<string, Route> = {}): Record<string, Route> => ({
  "POST /workers": () => json(200, worker("w")),
  "POST /workers/w/heartbeat": () => json(200, { directive: "running", heartbeat_interval_ms: 1000, tasks: [] }),
  "POST /workers/tasks/poll/batch": poll,
  "DELETE /workers/w": () => json(200, worker("w")),
  ...extra,
});
const once = (tasks: unknown[]): Route => (req, n) => (n === 1 ? json(200, { tasks, next_poll_after_ms: 0 }) : hangUntilAborted(req, n));
/** A logger that keeps every line with its level and fields (P-SDK-31). */
const recording = () => {
  const lines: Array<[string, string, Record<string, unknown>]> = [];
  const keep = (level: string) => (m: string, fields?: unknown) => lines.push([level, m, (fields ?? {}) as Record<string, unknown>]);
  const logger: Logger = { debug: keep("debug"), info: keep("info"), warn: keep("warn"), error: keep("error") };
  return { logger, lines, text: () => lines.map(([l, m]) => `${l} ${m}`).join("\n") };
};
const make = (m: ReturnType<typeof routed>, o: Partial<WorkerOptions> & Pick<WorkerOptions, "handlers">) =>
  new Worker({ client: new Orch8Client({ baseUrl: "http://h:1", fetch: m.fetch, maxRetries: 0 }), workerId: "w", handleSignals: false, ...o });
/** `p`'s outcome, or a rejection once `ms` passed (a worker that retries for ever fails fast). */
const within = <T>(p: Promise<T>, ms: number): Promise<T> => new Promise<T>((resolve, reject) => {
  const t = setTimeout(() => reject(new Error(`still running after ${ms} ms`)), ms);
  p.then((v) => { clearTimeout(t); resolve(v); }, (e: unknown) => { clearTimeout(t); reject(e); });
});
const bodies = (m: ReturnType<typeof routed>, key: string) => m.calls.filter((c) => c.key === key).map((c) => c.body as Record<string, unknown>);

// --- P-SDK-27 ------------------------------------------------------------------------------

test("P-SDK-27: a message over 16,384 bytes keeps its first 16,384 bytes, never cutting a character", () => {
  assert.equal(boundMessage("x".repeat(16_384)), "x".repeat(16_384), "at the limit: unchanged");
  for (const ch of ["é", "€", "😀"]) {
    const long = "a".repeat(16_383) + ch.repeat(10); // the character straddles byte 16,384
    const cut = boundMessage(long);
    assert.equal(cut, `${"a".repeat(16_383)} [truncated from ${bytes(long)} bytes]`, ch);
    assert.ok(!cut.includes("\ufffd"));
  }
  assert.equal(utf8Prefix("€€", 4), "€", "3 + 3 bytes cut at 4 keeps one whole character");
});

test("P-SDK-27: details over 65,536 bytes of JSON become {truncated, bytes, preview} with a 4,096-byte preview", () => {
  const small = { blob: "y".repeat(60_000) };
  assert.equal(boundDetails(small), small, "under the limit: unchanged");
  const big = { blob: "€".repeat(30_000) }; // `{"blob":"` is 9 bytes, so byte 4,096 falls inside a €
  const json = JSON.stringify(big);
  const out = boundDetails(big);
  assert.deepEqual(Object.keys(out), ["truncated", "bytes", "preview"]);
  assert.equal(out.truncated, true);
  assert.equal(out.bytes, bytes(json));
  const preview = out.preview as string;
  assert.equal(bytes(preview), 4_095);
  assert.ok(json.startsWith(preview));
});

/** A worker whose one task throws a huge PermanentError; `fail` answers its fails. */
function hugeFailure(fail: Route) {
  const rec = recording();
  const m = routed(base(once([claimed("f1", 60_000)]), { "POST /workers/tasks/f1/fail": fail }));
  const error = new PermanentError("é".repeat(1_048_576), {
    code: "too_big", details: { blob: "y".repeat(100_000) }, checkpoint: { blob: "z".repeat(2_000_000) },
  });
  const w = make(m, { logger: rec.logger, handlers: { h: () => { throw error; } } });
  return { m, w, rec };
}

test("P-SDK-27: a fail refused as a whole (413) is re-sent once without checkpoint, details report_refused", async () => {
  const { m, w } = hugeFailure((_req, n) => (n === 1 ? problem(413, "payload_too_large") : json(200, outcome("f1"))));
  const run = w.run();
  await until(() => w.stats().tasks_failed === 1, "the failure to land");
  await w.stop();
  await run;
  const [first, second] = bodies(m, "POST /workers/tasks/f1/fail");
  assert.equal(bytes(first!.error as string), 16_384 + ` [truncated from ${2 * 1_048_576} bytes]`.length, "message bounded");
  assert.equal((first!.details as { truncated: boolean }).truncated, true, "details bounded");
  assert.ok(first!.checkpoint !== undefined, "the first report carries the checkpoint");
  assert.deepEqual(second, {
    lease_id: "lease_f1", error: first!.error, retryable: false, code: "too_big",
    details: { report_refused: { status: 413, code: "payload_too_large" } },
  });
  assert.equal(w.stats().tasks_lease_lost, 0);
});

test("P-SDK-27: a second refusal gives the task up, logged at error with both refusals, counted lease lost", async () => {
  const { m, w, rec } = hugeFailure((_req, n) => (n === 1 ? problem(413, "payload_too_large") : problem(422, "validation_error")));
  const run = w.run();
  await until(() => w.stats().tasks_lease_lost === 1, "the give-up");
  await w.stop();
  await run;
  assert.equal(m.count("POST /workers/tasks/f1/fail"), 2, "one re-send, no more");
  const errors = rec.lines.filter(([level]) => level === "error").map(([, msg]) => msg);
  assert.equal(errors.length, 1, rec.text());
  assert.match(errors[0]!, /HTTP 413 payload_too_large.*HTTP 422 validation_error/);
  assert.equal(w.stats().tasks_failed, 0);
});

// --- P-SDK-28 ------------------------------------------------------------------------------

test("P-SDK-28: registration answered 501 (not an Orch8 server) ends run() at once with an error naming URL, status, http_501", async () => {
  const m = routed({ "POST /workers": () => new Response("Not Implemented", { status: 501 }) });
  const w = make(m, { handlers: { h: () => 1 }, logger: recording().logger });
  const err = await within(w.run(), 3000).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof Orch8Error, String(err));
  assert.match(err.message, /http:\/\/h:1/);
  assert.match(err.message, /HTTP 501 http_501/);
  assert.equal(err.status, 501);
  assert.equal(m.count("POST /workers"), 1, "not retried");
});

test("P-SDK-28: registration answered 404 not_found ends run() with its status, code and detail", async () => {
  const m = routed({ "POST /workers": () => problem(404, "not_found") });
  const w = make(m, { handlers: { h: () => 1 }, logger: recording().logger });
  const err = await within(w.run(), 3000).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof NotFoundError && err instanceof Orch8Error, String(err));
  assert.match(err.message, /http:\/\/h:1.*HTTP 404 not_found: detail of not_found/);
  assert.equal(m.count("POST /workers"), 1);
});

// --- P-SDK-29 ------------------------------------------------------------------------------

const deafTask = () => routed(base(once([claimed("s1", 60_000)]), { "POST /workers/tasks/s1/fail": () => json(200, outcome("s1")) }));

test("P-SDK-29: when the grace period runs out the shutdown message is 'grace period of N ms ended'", async () => {
  const m = deafTask();
  const w = make(m, { gracePeriodMs: 200, handlers: { h: () => new Promise(() => {}) } });
  const run = w.run();
  await until(() => w.stats().in_flight === 1, "the task to run");
  await w.stop();
  await run;
  assert.equal(bodies(m, "POST /workers/tasks/s1/fail")[0]!.error, "worker w shut down: grace period of 200 ms ended");
});

test("P-SDK-29: a second SIGINT ends the grace period; the message names it; both signals are logged", async () => {
  const rec = recording();
  const m = deafTask();
  const w = make(m, { gracePeriodMs: 25_000, handleSignals: true, logger: rec.logger, handlers: { h: () => new Promise(() => {}) } });
  const run = w.run();
  await until(() => w.stats().in_flight === 1, "the task to run");
  const t0 = Date.now();
  process.emit("SIGINT"); // runs the worker's listeners without signalling the test process
  process.emit("SIGINT");
  await run;
  assert.ok(Date.now() - t0 < 5000, "did not wait out the 25 s grace period");
  assert.equal(bodies(m, "POST /workers/tasks/s1/fail")[0]!.error, "worker w shut down: second signal SIGINT ended the grace period");
  const signals = rec.lines.filter(([, , fields]) => fields.event === "signal" || fields.event === "second_signal");
  assert.equal(signals.length, 2, rec.text());
  assert.deepEqual(signals.map(([, , f]) => [f.event, f.signal]), [["signal", "SIGINT"], ["second_signal", "SIGINT"]]);
  assert.equal(signals[0]![0], "info");
  assert.match(signals[0]![1], /SIGINT/);
  assert.equal(signals[1]![0], "warn");
  assert.match(signals[1]![1], /second signal SIGINT/);
});

test("P-SDK-29, P-SDK-11: a fail still waiting out a 30 s Retry-After is given up, counted and its hook run before run() returns", async () => {
  const m = routed(base(once([claimed("f1", 60_000)]), {
    "POST /workers/tasks/f1/fail": () => problem(503, "unavailable", { "Retry-After": "30" }),
  }));
  let abandoned = 0;
  const w = make(m, { gracePeriodMs: 100, handlers: { h: () => { throw new Error("boom"); } },
    hooks: { onTaskAbandoned: () => { abandoned++; } } });
  const run = w.run();
  await until(() => bodies(m, "POST /workers/tasks/f1/fail").length === 1, "the first fail");
  await w.stop();
  await within(run, 10_000);
  const s = w.stats();
  assert.deepEqual([s.tasks_lease_lost, s.in_flight, abandoned], [1, 0, 1], JSON.stringify(s));
});

// --- P-SDK-22 ------------------------------------------------------------------------------

test("P-SDK-22: a batch item's lease_lost is logged with the item's 409 and detail, never as HTTP 200", async () => {
  const rec = recording();
  const m = routed(base(once([claimed("b1", 60_000)]), { "POST /workers/tasks/complete/batch": () => json(200, batchAnswer([item("b1", "lease_lost")])) }));
  const w = make(m, { logger: rec.logger, handlers: { h: () => "stale" } });
  const run = w.run();
  await until(() => w.stats().tasks_lease_lost === 1, "the loss");
  await w.stop();
  await run;
  assert.match(rec.text(), /^warn orch8: task given up, no result sent: lease_lost: HTTP 409 lease_lost: detail of lease_lost$/m);
  assert.doesNotMatch(rec.text(), /HTTP 2\d\d/);
});

test("P-SDK-22: a heartbeat's lease_lost arriving after the task completed logs no give-up and no HTTP 200", async () => {
  const rec = recording();
  let w!: Worker;
  const m = routed(base(once([claimed("c1", 60_000)]), {
    // The answer to a beat that listed c1 comes only once c1's completion was acknowledged.
    "POST /workers/w/heartbeat": async (req) => {
      const ids = (req.body as { active_task_ids: string[] }).active_task_ids;
      if (ids.length > 0) await until(() => w.stats().tasks_completed === 1, "the completion");
      return json(200, { directive: "running", heartbeat_interval_ms: 20, tasks: ids.map((id) => ({ task_id: id, lease_expires_at: null, cancel_requested: false, lease_lost: true })) });
    },
    "POST /workers/tasks/complete/batch": async () => {
      await until(() => beatsWithTask() >= 1, "a heartbeat listing c1");
      return json(200, batchAnswer([item("c1")]));
    },
  }));
  const beatsWithTask = () => bodies(m, "POST /workers/w/heartbeat").filter((b) => (b.active_task_ids as string[]).length > 0).length;
  w = make(m, { logger: rec.logger, handlers: { h: () => "done" } });
  const run = w.run();
  await until(() => w.stats().tasks_completed === 1 && m.count("POST /workers/w/heartbeat") >= beatsWithTask() + 2, "later heartbeats");
  await w.stop();
  await run;
  assert.deepEqual([w.stats().tasks_completed, w.stats().tasks_lease_lost], [1, 0]);
  assert.doesNotMatch(rec.text(), /given up|HTTP 200/);
});

test("P-SDK-22: a refused connection is logged with the server URL and ECONNREFUSED", async () => {
  const rec = recording();
  const m = routed(base((_req, n) => (n === 1 ? refused(_req) : hangUntilAborted(_req, n))));
  const w = make(m, { logger: rec.logger, handlers: { h: () => 1 } });
  const run = w.run();
  await until(() => m.count("POST /workers/tasks/poll/batch") >= 1 && w.stats().poll_errors === 1, "the failed poll");
  await w.stop();
  await run;
  const line = rec.lines.find(([level, msg]) => level === "warn" && msg.includes("poll failed"));
  assert.ok(line, rec.text());
  assert.match(line[1], /http:\/\/h:1.*ECONNREFUSED/);
});

test("P-SDK-27: NUL in a message becomes U+FFFD (P-ERR-5 refuses NUL), so the report lands", () => {
  assert.equal(boundMessage("a\u0000b\u0000"), "a\uFFFDb\uFFFD");
});
