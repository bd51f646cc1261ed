// A small line chart in plain SVG for the queue history (P-OBS-5): one point per minute,
// y axis from 0 with round ticks, time labels on the x axis, a legend with each series'
// latest value. Our own ~150 lines instead of a chart library keeps the bundle small.
import { h } from "./dom";

export interface Series {
  key: string;
  label: string;
  color: string;
  /** One value per point of `times`; null where there is nothing to show (a gap). */
  values: (number | null)[];
  /** Shown after the latest value in the legend, e.g. "41 in 1 h". */
  note?: string;
}

export interface ChartSpec {
  id: string;
  title: string;
  /** What the y axis counts, e.g. "tasks / min". */
  unit: string;
  /** Start of each point's minute, oldest first (RFC 3339). */
  times: string[];
  series: Series[];
  /** How a value reads on the axis and in the legend. */
  format: (v: number) => string;
  /** Whole numbers only (counts): no 0.5 ticks. */
  integer?: boolean;
}

const SVG = "http://www.w3.org/2000/svg";
const W = 460;
const H = 170;
const M = { left: 46, right: 12, top: 12, bottom: 26 };

function s(tag: string, attrs: Record<string, string | number>, ...children: (Node | string)[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return el;
}

/** Round tick step (1, 2 or 5 times a power of ten) giving about four intervals up to `max`. */
export function ticks(max: number, integer = false): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / 4;
  const pow = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 5, 10].map((m) => m * pow).find((v) => v >= raw) ?? 10 * pow;
  if (integer) step = Math.max(1, Math.round(step));
  const top = Math.ceil(max / step) * step;
  const out: number[] = [];
  for (let v = 0; v <= top + step / 2; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function hhmm(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? "" : `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
}

function latest(values: (number | null)[]): number | null {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null) return values[i];
  return null;
}

/** A titled figure: legend with latest values, then the SVG plot. */
export function lineChart(spec: ChartSpec): HTMLElement {
  const n = spec.times.length;
  const all = spec.series.flatMap((ser) => ser.values.filter((v): v is number => v !== null));
  const yTicks = ticks(Math.max(0, ...all), spec.integer);
  const top = yTicks[yTicks.length - 1];
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const x = (i: number) => M.left + (n <= 1 ? plotW : (plotW * i) / (n - 1));
  const y = (v: number) => M.top + plotH - (plotH * v) / top;

  const grid = yTicks.map((v) =>
    s("g", { class: "tick-y" },
      s("line", { x1: M.left, x2: W - M.right, y1: y(v), y2: y(v), class: v === 0 ? "axis" : "gridline" }),
      s("text", { x: M.left - 6, y: y(v) + 4, "text-anchor": "end", class: "tick-label" }, spec.format(v))),
  );
  // Time labels every 15 minutes, counted back from the newest point so "now" is always labelled.
  const xLabels = spec.times.flatMap((t, i) =>
    (n - 1 - i) % 15 === 0
      ? [s("text", { x: x(i), y: H - 8, "text-anchor": i === 0 ? "start" : i === n - 1 ? "end" : "middle", class: "tick-label", "data-x": t }, hhmm(t))]
      : [],
  );
  const lines = spec.series.map((ser) => {
    let d = "";
    let pen = false;
    ser.values.forEach((v, i) => {
      if (v === null) {
        pen = false;
        return;
      }
      d += `${pen ? "L" : "M"}${x(i).toFixed(1)} ${y(v).toFixed(1)}`;
      pen = true;
    });
    const end = latest(ser.values);
    let endAt = ser.values.length - 1;
    while (endAt >= 0 && ser.values[endAt] === null) endAt--;
    return s("g", { "data-series": ser.key },
      s("path", { d: d || "M0 0", fill: "none", stroke: ser.color, "stroke-width": 2, "stroke-linejoin": "round", "data-values": ser.values.map((v) => (v === null ? "" : v)).join(",") }),
      end === null ? "" : s("circle", { cx: x(endAt), cy: y(end), r: 3.5, fill: ser.color, class: "end-dot" }),
    );
  });
  // One hover target per minute: the browser's tooltip reads every series at that minute.
  const hovers = spec.times.map((t, i) =>
    s("rect", { x: x(i) - plotW / Math.max(1, n - 1) / 2, y: M.top, width: plotW / Math.max(1, n - 1), height: plotH, class: "hover" },
      s("title", {}, `${hhmm(t)}  ${spec.series.map((ser) => `${ser.label} ${ser.values[i] === null ? "—" : spec.format(ser.values[i] as number)}`).join(" · ")}`)),
  );
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart-svg", role: "img", "aria-label": `${spec.title}, last ${n} minutes` },
    ...grid, ...xLabels, ...lines, ...hovers);
  return h(
    "figure",
    { class: "chart", "data-chart": spec.id },
    h("figcaption", null, h("strong", null, spec.title), h("span", { class: "muted small" }, ` · ${spec.unit}`)),
    h(
      "div",
      { class: "legend" },
      spec.series.map((ser) => {
        const v = latest(ser.values);
        return h(
          "span",
          { class: "legend-item", "data-legend": ser.key },
          h("span", { class: "swatch", style: `background:${ser.color}` }),
          `${ser.label} `,
          h("b", { "data-latest": ser.key }, v === null ? "—" : spec.format(v)),
          ser.note ? h("span", { class: "muted", "data-note": ser.key }, ` · ${ser.note}`) : null,
        );
      }),
    ),
    svg,
  );
}
