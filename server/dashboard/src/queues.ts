// Queue depth per queue and handler (GET /queues, P-OBS-1): one stacked bar per row, a
// badge for its pollers, and a click that filters the task list.
import type { QueueStats, TaskStatus } from "./api";
import { h, fill } from "./dom";
import { duration } from "./format";
import { empty, pollerBadge, pollerState } from "./widgets";

export interface QueueFilter {
  queue: string;
  handler: string;
  status?: TaskStatus;
}

const SEGMENTS = ["pending", "scheduled", "running", "failed"] as const;

// Stuck rows first: they are what an operator opens this page for.
const RANK = { stuck: 0, polling: 1, idle: 2 } as const;

export function renderQueues(el: HTMLElement, rows: QueueStats[], onPick: (f: QueueFilter) => void): void {
  if (rows.length === 0) {
    fill(el, empty("No queues yet: nothing is waiting, running or failed, and no worker is polling."));
    return;
  }
  const sorted = [...rows].sort(
    (a, b) =>
      RANK[pollerState(a)] - RANK[pollerState(b)] ||
      a.queue_name.localeCompare(b.queue_name) ||
      a.handler_name.localeCompare(b.handler_name),
  );
  const widest = Math.max(1, ...rows.map((r) => SEGMENTS.reduce((n, s) => n + r[s], 0)));
  fill(
    el,
    h(
      "div",
      { class: "queue-head" },
      h("span", null, "Pollers"),
      h("span", null, "Queue / handler"),
      h("span", null, "Depth"),
      h("span", { class: "num" }, "Oldest pending"),
    ),
    sorted.map((row) => queueRow(row, widest, onPick)),
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
      h("span", { class: "handler", title: row.handler_name }, row.handler_name),
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
    h(
      "div",
      { class: "num oldest" },
      row.oldest_pending_age_ms === null ? h("span", { class: "muted" }, "—") : duration(row.oldest_pending_age_ms),
    ),
  );
}
