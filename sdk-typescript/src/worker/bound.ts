// P-SDK-27: a failure report always fits. Before any fail is sent its message and details
// are bounded, so a 2 MiB exception text cannot get the report refused (413) and leave the
// task running until its lease dies. Sizes are UTF-8 bytes, as the server counts them.
import type { TaskFailureReport } from "../types.js";

export const MAX_MESSAGE_BYTES = 16_384;
export const MAX_DETAILS_BYTES = 65_536;
export const DETAILS_PREVIEW_BYTES = 4_096;

/** The first `max` UTF-8 bytes of `text`, never cut inside a character. */
export function utf8Prefix(text: string, max: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= max) return text;
  let cut = max;
  // A continuation byte (10xxxxxx) at the cut means a character would be split: back off.
  while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  return bytes.subarray(0, cut).toString("utf8");
}

/**
 * The message with NUL made U+FFFD (P-ERR-5 refuses NUL), or its first 16,384 bytes
 * followed by ` [truncated from N bytes]`.
 */
export function boundMessage(raw: string): string {
  const message = raw.replaceAll("\u0000", "\uFFFD");
  const size = Buffer.byteLength(message, "utf8");
  if (size <= MAX_MESSAGE_BYTES) return message;
  return `${utf8Prefix(message, MAX_MESSAGE_BYTES)} [truncated from ${size} bytes]`;
}

/** The details, or `{truncated, bytes, preview}` when their JSON text is over 65,536 bytes. */
export function boundDetails(details: Record<string, unknown>): Record<string, unknown> {
  const json = JSON.stringify(details) ?? "";
  const size = Buffer.byteLength(json, "utf8");
  if (size <= MAX_DETAILS_BYTES) return details;
  return { truncated: true, bytes: size, preview: utf8Prefix(json, DETAILS_PREVIEW_BYTES) };
}

/** The report with its message and details bounded; checkpoint and the rest untouched. */
export function boundReport(report: TaskFailureReport): TaskFailureReport {
  const bounded: TaskFailureReport = { ...report, error: boundMessage(report.error) };
  if (report.details !== undefined) bounded.details = boundDetails(report.details);
  return bounded;
}

/** The one re-send after a refusal: no checkpoint, details say what was refused. */
export function refusedReport(report: TaskFailureReport, status: number, code: string): TaskFailureReport {
  const { checkpoint: _dropped, ...rest } = report;
  return { ...rest, details: { report_refused: { status, code } } };
}
