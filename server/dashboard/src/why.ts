// The task page's "Why" line (P-OBS-7): what holds a pending or scheduled task, or who runs
// it, from the `waiting` of GET /tasks/{id}; and the instance page's, from the `waiting` of
// GET /instances/{id} (P-KEY-7). The server's `detail` sentence is always shown, since the
// reasons are an open set; a known reason adds the link or number that helps act.
import type { Instance, Task, TaskWaiting } from "./api";
import { h } from "./dom";
import { ago, stamp } from "./format";

type Tone = "time" | "blocked" | "ok" | "running" | "other";

// Short badge labels and how alarming each is: a hold an operator must lift is "blocked".
const REASONS: Record<string, [string, Tone]> = {
  scheduled: ["scheduled", "time"],
  retry_backoff: ["retry backoff", "time"],
  paused: ["paused", "blocked"],
  queue_cap: ["queue cap", "blocked"],
  handler_cap: ["handler cap", "blocked"],
  unroutable: ["unroutable", "blocked"],
  no_poller: ["no poller", "blocked"],
  concurrency_key: ["key full", "time"],
  rate_limited: ["rate limited", "time"],
  claimable: ["claimable", "ok"],
  running: ["running", "running"],
};

/** The Why panel, or nothing for a finished task or a server without `waiting`. */
export function whyPanel(t: Task): HTMLElement | null {
  const w = t.waiting;
  if (!w || w.reason === "finished") return null;
  return panel(w, specifics(t, w));
}

/**
 * The instance page's Why line: a started instance waiting for a slot of its concurrency
 * key (P-KEY-7); nothing for one that runs or ended, or a server without `waiting`.
 */
export function instanceWhyPanel(i: Instance): HTMLElement | null {
  const w = i.waiting;
  if (!w) return null;
  const key = w.reason === "concurrency_key" ? extra([load(w), " instances of ", h("code", null, i.concurrency_key ?? "?"), " running: it starts when one of them ends"]) : null;
  return panel(w, key);
}

function panel(w: TaskWaiting, specific: HTMLElement | null): HTMLElement {
  const [label, tone] = REASONS[w.reason] ?? [w.reason, "other"];
  return h(
    "section",
    { class: "why", "data-testid": "why", "data-reason": w.reason },
    h("span", { class: "why-label" }, "Why"),
    h("span", { class: `badge why-${tone}`, "data-testid": "why-badge" }, h("span", { class: "dot" }), label),
    h("span", { class: "why-detail", "data-testid": "why-detail" }, w.detail),
    specific,
  );
}

/** "running/cap", e.g. 2/2. */
function load(w: TaskWaiting): HTMLElement {
  return h("b", { "data-testid": "why-load" }, `${w.running ?? "?"}/${w.cap ?? "?"}`);
}

/** The figure or link of a known reason; an unknown one has only its detail. */
function specifics(t: Task, w: TaskWaiting): HTMLElement | null {
  const queue = queueLink(t.queue_name);
  switch (w.reason) {
    case "scheduled":
    case "retry_backoff":
      return extra(w.until ? ["claimable ", when(w.until, "until")] : null);
    case "paused":
      return extra(["resume it on ", queue]);
    case "queue_cap":
    case "handler_cap":
      return extra([load(w), " running · caps on ", queue]);
    case "concurrency_key":
      return extra([load(w), " slots of ", h("code", null, t.concurrency_key ?? "?"), " taken: admitted as one frees"]);
    case "rate_limited": {
      // No `until` while the burst's admitted tasks wait for workers: their claims let it in (P-RATE-2).
      const key = h("code", null, t.rate_limit_key ?? "?");
      return extra(w.until ? ["claimable ", when(w.until, "until"), " · rate limit ", key] : ["rate limit ", key, ": admitted as workers claim its admitted tasks"]);
    }
    case "unroutable":
      return extra(["needs labels ", ...labels(t.required_labels), "· start a worker with them"]);
    case "no_poller":
      return extra(["start a worker that polls ", h("code", null, t.handler_name), " on ", queue]);
    case "claimable":
      return extra([h("b", { "data-testid": "why-pollers" }, String(w.pollers ?? 0)), ` polling worker(s): handed out as a slot frees`]);
    case "running":
      return extra(running(w));
    default:
      return null;
  }
}

function running(w: TaskWaiting): (Node | string)[] {
  const worker = w.worker_id
    ? // No workers page: the overview's task list filtered by the worker sits beside its row.
      h("a", { class: "mono", href: `#/?worker=${encodeURIComponent(w.worker_id)}&range=all`, "data-testid": "why-worker", title: "This worker's tasks, and the workers table" }, w.worker_id)
    : h("span", { class: "muted" }, "an anonymous poller");
  const beat = w.last_heartbeat_at ? ["last heartbeat ", when(w.last_heartbeat_at, "heartbeat")] : ["no heartbeat known"];
  const lease = w.lease_expires_at ? [" · lease ends ", when(w.lease_expires_at, "lease")] : [];
  return [worker, " · ", ...beat, ...lease];
}

function extra(children: (Node | string)[] | null): HTMLElement | null {
  return children ? h("span", { class: "why-extra small", "data-testid": "why-extra" }, children) : null;
}

/** "in 40 s" / "12 s ago", the exact time on hover, the ISO in data-<name>. */
function when(iso: string, name: string): HTMLElement {
  return h("b", { title: stamp(iso), [`data-${name}`]: iso }, ago(iso));
}

function queueLink(queue: string): HTMLElement {
  return h("a", { href: `#/queues/${encodeURIComponent(queue)}`, "data-testid": "why-queue" }, `queue ${queue}`);
}

function labels(required: Record<string, string>): HTMLElement[] {
  return Object.entries(required).map(([k, v]) => h("span", { class: "chip", "data-label": k }, `${k}=${v}`));
}
