// What a handler throws becomes the failure report (P-SDK-6); the status classifier.
import { test } from "node:test";
import assert from "node:assert/strict";
import { PermanentError, RetryableError, errorForStatus, isRetryableStatus } from "../../src/index.js";
import { failureReport } from "../../src/worker/report.js";

test("RetryableError fails retryable with code retryable_error, retry_after_ms and checkpoint", () => {
  const err = new RetryableError("upstream 503", { retryAfterMs: 1500, checkpoint: { page: 3 }, details: { host: "x" } });
  assert.deepEqual(failureReport(err, "lease_1"), {
    lease_id: "lease_1", error: "upstream 503", retryable: true, code: "retryable_error",
    retry_after_ms: 1500, checkpoint: { page: 3 }, details: { host: "x" },
  });
  assert.equal(failureReport(new RetryableError("x", { code: "rate_limited_upstream" }), "l").code, "rate_limited_upstream");
});

test("PermanentError fails permanently with code permanent_error unless given", () => {
  assert.deepEqual(failureReport(new PermanentError("bad input"), "lease_1"), {
    lease_id: "lease_1", error: "bad input", retryable: false, code: "permanent_error",
  });
  assert.equal(failureReport(new PermanentError("x", { code: "invalid_image" }), "l").code, "invalid_image");
  // P-SDK-20: a PermanentError carries code, details and a checkpoint too.
  assert.deepEqual(failureReport(new PermanentError("gone", { code: "c", details: { d: 1 }, checkpoint: { step: 2 } }), "l"), {
    lease_id: "l", error: "gone", retryable: false, code: "c", details: { d: 1 }, checkpoint: { step: 2 },
  });
});

test("anything else fails retryable with code unhandled_error, details exactly {type, message, stack} (P-SDK-20)", () => {
  const err = new TypeError("x is undefined");
  assert.deepEqual(failureReport(err, "l"), {
    lease_id: "l", error: "x is undefined", retryable: true, code: "unhandled_error",
    details: { type: "TypeError", message: "x is undefined", stack: err.stack },
  });
  assert.deepEqual(failureReport("just a string", "l").details, { type: "string", message: "just a string", stack: "" });
  const thrownString = failureReport("just a string", "l");
  assert.equal(thrownString.code, "unhandled_error");
  assert.equal(thrownString.error, "just a string");
  // Not cut here: every fail is bounded where it is sent (P-SDK-27, worker-reports.test.ts).
  assert.equal(failureReport(new Error("y".repeat(70000)), "l").error.length, 70000);
});

test("status classifier: 408, 429 and 5xx retryable; other 4xx permanent", () => {
  for (const s of [408, 429, 500, 502, 503, 504, 599]) assert.equal(isRetryableStatus(s), true, String(s));
  for (const s of [400, 401, 403, 404, 409, 410, 422]) assert.equal(isRetryableStatus(s), false, String(s));
  assert.ok(errorForStatus(503) instanceof RetryableError);
  const perm = errorForStatus(404, "no such image");
  assert.ok(perm instanceof PermanentError);
  assert.equal(perm.message, "no such image");
  assert.deepEqual(perm.details, { http_status: 404 });
});
