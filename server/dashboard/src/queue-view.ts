// One queue (#/queues/<name>): why it is or is not draining (GET /queues, P-OBS-4), its
// controls (P-CTRL-1, P-CTRL-2), and charts of its last hour (GET /queues/{q}/history,
// P-OBS-5), refreshed by the page's refresh loop. The controls are for operator and admin
// keys only (P-AUTH-2).
import { api, ApiError, type QueueHistory, type QueueStats, type QueueStatsList } from "./api";
import { lineChart } from "./chart";
import { fill, h, refill } from "./dom";
import { duration, stamp } from "./format";
import { QueueControls } from "./queue-controls";
import { blockedBadge, empty, pollerBadge, problemBox } from "./widgets";

const COLORS = {
  enqueued: "#7c3aed",
  completed: "#15803d",
  failed: "#dc2626",
  depth: "#d97706",
  p50: "#2563eb",
  p95: "#db2777",
};

/** Wait times: "40 ms", "1.2 s", "3 min". */
function waitText(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  return duration(ms);
}

/** The view behind #/queues/<name>; `load` is called by the page's refresh loop. */
export class QueueView {
  private readonly controls: QueueControls;
  private readonly head = h("div", { class: "detail-head" });
  private readonly handlers = h("div", { "data-testid": "queue-handlers" });
  private readonly charts = h("div", { class: "charts", "data-testid": "charts" }, empty("Loading the last hour…"));
  private readonly updated = h("span", { class: "muted small" });
  private shown = false;

  constructor(
    readonly queue: string,
    private readonly onUnreachable: (err: ApiError | null) => void,
    private readonly operate: boolean,
  ) {
    this.controls = new QueueControls(queue, () => this.load());
  }

  mount(root: HTMLElement): void {
    fill(
      root,
      h("a", { href: "#/", class: "back" }, "← Overview"),
      h(
        "div",
        { class: "card", "data-testid": "queue-view" },
        this.head,
        this.operate ? this.controls.el : h("div", { class: "muted small", "data-testid": "no-controls" }, "Pause, resume and caps need an operator or admin key."),
        this.handlers,
      ),
      h(
        "div",
        { class: "card" },
        h("div", { class: "card-head" }, h("h2", null, "Last hour"), h("span", { class: "muted" }, "per minute · hover a chart for every minute's values"), h("span", { class: "spacer" }), this.updated),
        this.charts,
      ),
    );
  }

  async load(): Promise<void> {
    // Stats and history fail separately: a history error still leaves the controls usable.
    const [stats, history] = await Promise.allSettled([api.queues(), api.queueHistory(this.queue)]);
    const unreachable = [stats, history].find((r) => r.status === "rejected" && r.reason instanceof ApiError && r.reason.unreachable);
    this.onUnreachable(unreachable?.status === "rejected" ? (unreachable.reason as ApiError) : null);
    if (unreachable && this.shown) return; // keep what is shown; the banner marks it stale
    if (stats.status === "fulfilled") this.renderStats(stats.value);
    else fill(this.handlers, problemBox(stats.reason, "Could not load the queue: "));
    if (history.status === "fulfilled") this.renderHistory(history.value);
    else fill(this.charts, problemBox(history.reason, "Could not load the queue's history: "));
    this.shown = true;
  }

  private renderStats(list: QueueStatsList): void {
    const rows = list.queues.filter((r) => r.queue_name === this.queue);
    const control = (list.queue_controls ?? []).find((c) => c.queue_name === this.queue) ?? null;
    const paused = control?.paused ?? rows.some((r) => r.paused);
    // The pill already says paused; the badges add the other reasons (P-OBS-4).
    const reasons = [...new Set(rows.map((r) => r.blocked).filter((b) => b !== null && b !== "paused"))];
    fill(
      this.head,
      h(
        "div",
        null,
        h("h2", { class: "mono", "data-testid": "queue-name" }, this.queue),
        h("div", { class: "muted" }, `queue · ${rows.length} handler(s) with work or pollers`),
      ),
      h(
        "div",
        { class: "row", "data-testid": "queue-state" },
        h("span", { class: `pill ${paused ? "pill-paused" : "pill-active"}`, "data-paused": String(paused) }, paused ? "paused" : "active"),
        reasons.map((r) => blockedBadge(r)),
      ),
    );
    const handlerNames = [...new Set(rows.map((r) => r.handler_name))].sort();
    this.controls.update({
      control,
      running: control?.running ?? rows.reduce((n, r) => n + r.running, 0),
      handlers: handlerNames.map((name) => ({ name, control: (list.handler_controls ?? []).find((c) => c.handler_name === name) ?? null })),
    });
    refill(this.handlers, rows.length ? handlerTable(rows) : empty("Nothing is waiting, running or failed on this queue, and no worker polls it."));
  }

  private renderHistory(hist: QueueHistory): void {
    const pts = hist.points;
    const times = pts.map((p) => p.at);
    const total = (k: "enqueued" | "completed" | "failed") => pts.reduce((n, p) => n + p[k], 0);
    const span = `${pts.length} min`;
    this.updated.textContent = `as of ${stamp(hist.generated_at).slice(11)}`;
    fill(
      this.charts,
      lineChart({
        id: "throughput",
        title: "Throughput",
        unit: "tasks per minute · latest minute in bold",
        times,
        integer: true,
        format: (v) => String(v),
        series: (["enqueued", "completed", "failed"] as const).map((k) => ({
          key: k,
          label: k,
          color: COLORS[k],
          values: pts.map((p) => p[k]),
          note: `${total(k)} in ${span}`,
        })),
      }),
      lineChart({
        id: "depth",
        title: "Depth",
        unit: "pending tasks at the end of each minute",
        times,
        integer: true,
        format: (v) => String(v),
        series: [{ key: "depth", label: "pending", color: COLORS.depth, values: pts.map((p) => p.depth) }],
      }),
      lineChart({
        id: "wait",
        title: "Queue wait",
        unit: "ready to claimed, of each minute's claims",
        times,
        format: waitText,
        series: [
          { key: "wait_p50_ms", label: "p50", color: COLORS.p50, values: pts.map((p) => p.wait_p50_ms) },
          { key: "wait_p95_ms", label: "p95", color: COLORS.p95, values: pts.map((p) => p.wait_p95_ms) },
        ],
      }),
    );
  }
}

function handlerTable(rows: QueueStats[]): HTMLElement {
  const head = ["Handler", "Pollers", "Pending", "Running", "Failed", "Unroutable", "Blocked", "Caps"];
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "grid queue-handlers" },
      h("thead", null, h("tr", null, head.map((t) => h("th", { class: ["Pending", "Running", "Failed", "Unroutable"].includes(t) ? "num" : null }, t)))),
      h(
        "tbody",
        null,
        [...rows]
          .sort((a, b) => a.handler_name.localeCompare(b.handler_name))
          .map((r) =>
            h(
              "tr",
              { "data-handler": r.handler_name },
              h("td", { class: "mono" }, r.handler_name),
              h("td", null, pollerBadge(r)),
              h("td", { class: "num" }, String(r.pending)),
              h("td", { class: "num" }, String(r.running)),
              h("td", { class: "num" }, String(r.failed)),
              h("td", { class: "num", "data-testid": "unroutable" }, String(r.unroutable ?? "—")),
              h("td", null, blockedBadge(r.blocked) ?? h("span", { class: "muted" }, "—")),
              h(
                "td",
                { class: "muted small" },
                [r.queue_max_running != null ? `queue ≤ ${r.queue_max_running}` : null, r.handler_max_running != null ? `handler ≤ ${r.handler_max_running}` : null]
                  .filter(Boolean)
                  .join(" · ") || "none",
              ),
            ),
          ),
      ),
    ),
  );
}
