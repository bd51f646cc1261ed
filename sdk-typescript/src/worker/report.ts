// Turns what a handler threw into the failure report the server stores (P-SDK-6).
import type { TaskFailureReport } from "../types.js";
import { PermanentError, RetryableError } from "./errors.js";

const MAX_MESSAGE = 65536; // TaskFailureReport.error maxLength

function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  return (text || "error").slice(0, MAX_MESSAGE);
}

/** The fail body for `error`, bound to the lease that ran it. */
export function failureReport(error: unknown, leaseId: string): TaskFailureReport {
  if (error instanceof RetryableError) {
    const report: TaskFailureReport = { lease_id: leaseId, error: messageOf(error), retryable: true, code: error.code };
    if (error.retryAfterMs !== undefined) report.retry_after_ms = Math.max(0, Math.round(error.retryAfterMs));
    if (error.details !== undefined) report.details = error.details;
    if (error.checkpoint !== undefined) report.checkpoint = error.checkpoint;
    return report;
  }
  if (error instanceof PermanentError) {
    const report: TaskFailureReport = { lease_id: leaseId, error: messageOf(error), retryable: false, code: error.code };
    if (error.details !== undefined) report.details = error.details;
    return report;
  }
  // Anything else is a bug or an outage in the handler: worth another attempt.
  const name = error instanceof Error ? error.name : typeof error;
  return { lease_id: leaseId, error: messageOf(error), retryable: true, code: "unhandled_error", details: { type: name } };
}
