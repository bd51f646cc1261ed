// W3C Trace Context in task headers (P-TEL-1): written and read here, so the format does not
// depend on which global propagator the application installed (or none).
import { createTraceState, isSpanContextValid, TraceFlags, type SpanContext } from "@opentelemetry/api";

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** P-TEL-1: sets `traceparent` (and `tracestate` when not empty) unless the caller set one. */
export function injectHeaders(headers: Record<string, string> | undefined, sc: SpanContext): Record<string, string> {
  const out = { ...headers };
  if (out.traceparent !== undefined || !isSpanContextValid(sc)) return out; // the caller's wins
  const flags = (sc.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, "0");
  out.traceparent = `00-${sc.traceId}-${sc.spanId}-${flags}`;
  const state = sc.traceState?.serialize();
  if (state) out.tracestate = state;
  return out;
}

/** The remote span context in `headers`, or undefined when absent or malformed. */
export function extractHeaders(headers: Record<string, string> | undefined): SpanContext | undefined {
  const m = TRACEPARENT.exec(headers?.traceparent?.trim() ?? "");
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  // Version ff is invalid; version 00 has exactly four fields (W3C Trace Context, 3.2).
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  const sc: SpanContext = { traceId: traceId!, spanId: spanId!, traceFlags: parseInt(flags!, 16) & TraceFlags.SAMPLED, isRemote: true };
  const state = headers?.tracestate;
  if (state) sc.traceState = createTraceState(state);
  return isSpanContextValid(sc) ? sc : undefined;
}
