// Queue depth per queue and handler (GET /queues, P-OBS-1): one stacked bar per row, a
// badge for its pollers, why it does not drain (P-OBS-4) with its pause and caps, and a
// click that filters the task list. Paused or capped queues without tasks get a row too,
// capped handlers a line under the table (P-CTRL-3).
import type { QueueStats, QueueStatsList, TaskStatus } from "./api";
import { h, fill, refill } from "./dom";
import { duration } from "./format";
import { blockedBadge, empty, pollerBadge, pollerState } from "./widgets";

export interface QueueFilter {
  queue: string;
  handler: string;
  status?: TaskStatus;
}

const SEGMENTS = ["pending", "scheduled", "running", "failed"] as const;

// Stuck rows first, then blocked ones: they are what an operator opens this page for.
const RANK = { stuck: 0, blocked: 1, polling: 2, idle: 3 } as const;
const rank = (r: QueueStats) => RANK[pollerState(r) === "stuck" ? "stuck" : r.blocked ? "blocked" : pollerState(r)];

/** The queue view of one queue: its charts and controls. */
export const queueHref = (queue: string) => `#/queues/${encodeURIComponent(queue)}`;

/** GET /queues rows plus a row (handler "") for each paused or capped queue that has none (P-CTRL-3). */
export function withControlRows(list: QueueStatsList): QueueStats[] {
  const seen = new Set(list.queues.map((r) => r.queue_name));
  const extra = (list.queue_controls ?? [])
    .filter((c) => !seen.has(c.queue_name))
    .map((c): QueueStats => ({
      queue_name: c.queue_name, handler_name: "", pending: 0, scheduled: 0, running: c.running, failed: 0,
      oldest_pending_age_ms: null, active_pollers: 0, unroutable: 0, held: 0, paused: c.paused,
      queue_max_running: c.max_running, handler_max_running: null, blocked: null,
    }));
  return [...list.queues, ...extra];
}

export function renderQueues(el: HTMLElement, list: QueueStatsList, onPick: (f: QueueFilter) => void): void {
  const rows = withControlRows(list);
  const handlerCaps = list.handler_controls ?? [];
  const capsLine = handlerCaps.length
    ? h(
        "div",
        { class: "handler-caps muted small", "data-testid": "handler-caps" },
        "Handler caps (every queue): ",
        handlerCaps.map((c) =>
          h("span", { class: "chip", "data-handler-cap": c.handler_name }, `${c.handler_name} ≤ ${c.max_running ?? "∞"} · ${c.running} running`),
        ),
      )
    : null;
  if (rows.length === 0) {
    fill(el, empty("No queues yet: nothing is waiting, running or failed, and no worker is polling."), capsLine);
    return;
  }
  const sorted = [...rows].sort(
    (a, b) =>
      rank(a) - rank(b) ||
      a.queue_name.localeCompare(b.queue_name) ||
      a.handler_name.localeCompare(b.handler_name),
  );
  const widest = Math.max(1, ...rows.map((r) => SEGMENTS.reduce((n, s) => n + r[s], 0)));
  refill(
    el,
    h(
      "div",
      { class: "queue-head" },
      h("span", null, "Pollers"),
      h("span", null, "Queue / handler"),
      h("span", null, "Depth"),
      h("span", null, "Controls"),
      h("span", { class: "num" }, "Oldest pending"),
    ),
    sorted.map((row) => queueRow(row, widest, onPick)),
    capsLine,
  );
}

/** Why the row does not drain (P-OBS-4), its pause and caps, and the way to its queue view. */
function controlsCell(row: QueueStats): HTMLElement {
  const chip = (key: string, text: string, title: string) => h("span", { class: "chip", "data-control": key, title }, text);
  return h(
    "div",
    { class: "controls-cell" },
    blockedBadge(row.blocked),
    row.paused && row.blocked !== "paused" ? chip("paused", "paused", "The queue is paused (P-CTRL-1)") : null,
    row.queue_max_running != null ? chip("queue_max_running", `queue ≤ ${row.queue_max_running}`, "Most tasks of this queue running at once (P-CTRL-2)") : null,
    row.handler_max_running != null ? chip("handler_max_running", `handler ≤ ${row.handler_max_running}`, "Most tasks of this handler running at once, every queue (P-CTRL-2)") : null,
    (row.unroutable ?? 0) > 0 ? chip("unroutable", `${row.unroutable} unroutable`, "Pending tasks whose required labels no live worker has (P-LABEL-3)") : null,
    h("a", {
      class: "queue-link small",
      href: queueHref(row.queue_name),
      title: `Charts, pause and caps of queue ${row.queue_name}`,
      onclick: (ev: Event) => ev.stopPropagation(),
    }, "charts & controls ›"),
  );
}

function queueRow(row: QueueStats, widest: number, onPick: (f: QueueFilter) => void): HTMLElement {
  const pick = (status?: TaskStatus) => (ev: Event) => {
    ev.stopPropagation();
    onPick({ queue: row.queue_name, handler: row.handler_name, status });
  };
  const total = SEGMENTS.reduce((n, s) => n + row[s], 0);
  const bar = h(
    "div",
    { class: "bar", style: `width:${Math.max(2, (100 * total) / widest)}%` },
    SEGMENTS.filter((s) => row[s] > 0).map((s) =>
      h("button", {
        class: `seg seg-${s}`,
        style: `flex-grow:${row[s]}`,
        title: `${row[s]} ${s}: show these tasks`,
        "aria-label": `${row[s]} ${s}`,
        "data-segment": s,
        onclick: pick(s),
      }),
    ),
  );
  return h(
    "div",
    {
      class: `queue-row state-${pollerState(row)}`,
      "data-queue": row.queue_name,
      "data-handler": row.handler_name,
      role: "button",
      tabindex: 0,
      title: "Show the tasks of this queue and handler",
      onclick: pick(),
      onkeydown: (ev: Event) => (ev as KeyboardEvent).key === "Enter" && pick()(ev),
    },
    h("div", null, pollerBadge(row)),
    h(
      "div",
      { class: "queue-name" },
      row.handler_name
        ? h("span", { class: "handler", title: row.handler_name }, row.handler_name)
        : h("span", { class: "handler muted", title: "No task of this queue is waiting, running or failed" }, "no tasks"),
      h("span", { class: "queue muted", title: `queue ${row.queue_name}` }, row.queue_name),
    ),
    h(
      "div",
      { class: "depth" },
      h("div", { class: "bar-track" }, total > 0 ? bar : null),
      h(
        "div",
        { class: "counts" },
        SEGMENTS.map((s) =>
          h(
            "button",
            { class: `count count-${s}${row[s] ? "" : " zero"}`, "data-count": s, onclick: pick(s) },
            h("span", { class: `swatch seg-${s}` }),
            h("b", null, String(row[s])),
            ` ${s}`,
          ),
        ),
      ),
    ),
    controlsCell(row),
    h(
      "div",
      { class: "num oldest" },
      row.oldest_pending_age_ms === null ? h("span", { class: "muted" }, "—") : duration(row.oldest_pending_age_ms),
    ),
  );
}
