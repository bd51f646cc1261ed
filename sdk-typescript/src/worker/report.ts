// Turns what a handler threw into the failure report the server stores (P-SDK-6, P-SDK-20),
// or into the release of a yield (P-SDK-32).
import type { Orch8Error } from "../errors.js";
import type { TaskFailureReport, TaskRelease } from "../types.js";
import { PermanentError, RetryableError, type Yield } from "./errors.js";
import type { InvalidOutputError } from "./output.js";

// Not cut here: every fail is bounded once, where it is sent (P-SDK-27, bound.ts).
function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  return text || "error";
}

/** The fail body for `error`, bound to the lease that ran it. */
export function failureReport(error: unknown, leaseId: string): TaskFailureReport {
  if (error instanceof RetryableError || error instanceof PermanentError) {
    const retryable = error instanceof RetryableError;
    const report: TaskFailureReport = { lease_id: leaseId, error: messageOf(error), retryable, code: error.code };
    if (retryable && error.retryAfterMs !== undefined) report.retry_after_ms = Math.max(0, Math.round(error.retryAfterMs));
    if (error.details !== undefined) report.details = error.details;
    if (error.checkpoint !== undefined) report.checkpoint = error.checkpoint;
    return report;
  }
  // Anything else is a bug or an outage in the handler: worth another attempt. P-SDK-20:
  // details have exactly the keys type, message and stack, in every SDK.
  const type = error instanceof Error ? error.name : typeof error;
  const stack = error instanceof Error && typeof error.stack === "string" ? error.stack : "";
  return {
    lease_id: leaseId, error: messageOf(error), retryable: true, code: "unhandled_error",
    details: { type, message: error instanceof Error ? error.message : String(error), stack },
  };
}

/** P-SDK-15: an output that is not strict JSON fails permanently; it is never re-sent. */
export function invalidOutputReport(error: InvalidOutputError, leaseId: string): TaskFailureReport {
  return { lease_id: leaseId, error: error.message, retryable: false, code: "invalid_output", details: { type: error.type, message: error.message } };
}

/** P-SDK-15: a completion the server refused on its own; the fail carries no output, so it fits. */
export function outputRejectedReport(refusal: Orch8Error, leaseId: string): TaskFailureReport {
  return {
    lease_id: leaseId, error: `output rejected by the server: ${refusal.message}`, retryable: false,
    code: "output_rejected", details: { status: refusal.status, code: refusal.code },
  };
}

/** The contract's bound of TaskRelease.delay_ms (P-SDK-32). */
export const MAX_RELEASE_DELAY_MS = 86_400_000;

/** The release a yield asks for: its checkpoint, its delay clamped to the contract's bounds. */
export function yieldRelease(y: Yield, leaseId: string): TaskRelease {
  const delay = Number.isFinite(y.delayMs) ? Math.round(y.delayMs) : 0;
  const body: TaskRelease = { lease_id: leaseId, delay_ms: Math.min(Math.max(0, delay), MAX_RELEASE_DELAY_MS) };
  if (y.checkpoint !== undefined) body.checkpoint = y.checkpoint;
  return body;
}
