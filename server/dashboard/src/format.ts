// Formatting of times, durations and JSON for display. Times on the wire are RFC 3339 UTC.

/** "4 s", "3 min", "2 h", "5 d": short, for tables. */
export function duration(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 1) return `${Math.max(0, Math.round(Math.abs(ms)))} ms`;
  if (s < 90) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min`;
  const hours = Math.round(m / 60);
  if (hours < 48) return `${hours} h`;
  return `${Math.round(hours / 24)} d`;
}

/** "< 1 ms", "412 ms", "1.42 s", "12.3 s", then as `duration`: for waits and run times. */
export function precise(ms: number): string {
  if (ms < 1) return "< 1 ms";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms < 90_000) return `${(ms / 1000).toFixed(1)} s`;
  return duration(ms);
}

/** "12 s ago" / "in 40 s" relative to now; "—" for null. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return "—";
  const delta = Date.parse(iso) - now;
  if (Number.isNaN(delta)) return iso;
  if (Math.abs(delta) < 1000) return "just now";
  return delta < 0 ? `${duration(-delta)} ago` : `in ${duration(delta)}`;
}

/** Local date and time with seconds, e.g. "2026-11-21 10:30:05". */
export function stamp(iso: string | null | undefined): string {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, "0");
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

export function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** True for the values a JSON block shows as "empty" rather than printing them. */
export function isEmpty(value: unknown): boolean {
  if (value === null || value === undefined) return true;
  if (typeof value === "object") return Object.keys(value as object).length === 0;
  return false;
}
