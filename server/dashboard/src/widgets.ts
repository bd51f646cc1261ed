// Small building blocks shared by the views: status pills, problem boxes, JSON blocks.
import { ApiError, type BlockedReason, type QueueStats } from "./api";
import { h } from "./dom";
import { isEmpty, json } from "./format";

export function pill(status: string, extra = ""): HTMLElement {
  return h("span", { class: `pill pill-${status} ${extra}`.trim(), "data-status": status }, status);
}

/** The stuck-queue signal of P-OBS-1: pending work that nobody polls for. */
export type PollerState = "polling" | "idle" | "stuck";

export function pollerState(row: QueueStats): PollerState {
  if (row.active_pollers > 0) return "polling";
  return row.pending > 0 ? "stuck" : "idle";
}

export function pollerBadge(row: QueueStats): HTMLElement {
  const state = pollerState(row);
  const label =
    state === "polling"
      ? `${row.active_pollers} polling`
      : state === "stuck"
        ? "no poller"
        : "idle";
  const why =
    state === "stuck"
      ? "Tasks are pending but no worker has polled for this handler recently: the queue is stuck."
      : state === "polling"
        ? `${row.active_pollers} worker(s) polled for this handler recently.`
        : "No worker polls for this handler, and nothing is pending.";
  return h("span", { class: `badge badge-${state}`, "data-badge": state, title: why }, h("span", { class: "dot" }), label);
}

// P-OBS-4: why a row's pending tasks are not handed out, in an operator's words.
const BLOCKED: Record<BlockedReason, [string, string]> = {
  paused: ["paused", "The queue is paused: polls claim none of its tasks until it is resumed."],
  queue_cap: ["queue cap reached", "The queue's running cap is reached: claims wait until running tasks finish."],
  handler_cap: ["handler cap reached", "The handler's running cap (on every queue) is reached: claims wait until running tasks finish."],
  held: ["held by keys", "Every pending task waits for a slot of its concurrency key or a token of its rate limit (P-KEY-1, P-RATE-1)."],
  unroutable: ["unroutable", "Every pending task requires worker labels that no live registered worker has."],
};

/** The blocked reason of a GET /queues row (P-OBS-4), or nothing when the row drains. */
export function blockedBadge(reason: BlockedReason | null | undefined): HTMLElement | null {
  if (!reason) return null;
  const [label, why] = BLOCKED[reason] ?? [reason, reason];
  return h("span", { class: `badge badge-blocked blocked-${reason}`, "data-blocked": reason, title: why }, h("span", { class: "dot" }), label);
}

/** An error, readable: a problem+json body shows its status, code, detail and field errors. */
export function problemBox(err: unknown, context = ""): HTMLElement {
  if (err instanceof ApiError && err.problem) {
    const p = err.problem;
    return h(
      "div",
      { class: "problem", role: "alert", "data-code": p.code },
      h(
        "div",
        { class: "problem-head" },
        h("strong", null, `${context}${p.title || "Request failed"}`),
        h("span", { class: "problem-code" }, `${p.status} · ${p.code}`),
      ),
      p.detail ? h("div", { class: "problem-detail" }, p.detail) : null,
      // P-AUTH-3: the key is valid; its role or tenant is not enough for this view or action.
      p.code === "forbidden"
        ? h("div", { class: "problem-hint", "data-testid": "forbidden-hint" }, "This API key's role or tenant does not allow it: ask for an operator key (or admin, for every tenant).")
        : null,
      p.errors?.length
        ? h(
            "ul",
            { class: "problem-errors" },
            p.errors.map((e) => h("li", null, h("code", null, e.pointer || "(body)"), " ", e.detail)),
          )
        : null,
    );
  }
  const message = err instanceof Error ? err.message : String(err);
  return h(
    "div",
    { class: "problem", role: "alert", "data-code": err instanceof ApiError && err.unreachable ? "connection_error" : "error" },
    h("div", { class: "problem-head" }, h("strong", null, `${context}${message}`)),
  );
}

export function jsonBlock(title: string, value: unknown, testId: string): HTMLElement {
  return h(
    "section",
    { class: "json-block", "data-testid": testId },
    h("h3", null, title),
    isEmpty(value)
      ? h("div", { class: "muted empty" }, value === null || value === undefined ? "none" : "empty")
      : h("pre", null, json(value)),
  );
}

export function empty(text: string): HTMLElement {
  return h("div", { class: "empty-state" }, text);
}
