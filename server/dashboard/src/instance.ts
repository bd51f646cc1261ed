// One workflow instance (GET /instances/{id}): its state, input and output, and the step
// timeline: each step's status, task link, attempts, output or error, start and finish;
// parallel children under their group (P-WF-3), a step whose fallback ran marked as such,
// and the sequence's on_error step last (P-WF-5). Cancel (P-WF-7: producer, operator,
// admin) and retry from the failed step (P-WF-8: operator, admin), behind a confirmation.
import { api, ApiError, type Instance, type StepRun } from "./api";
import { fill, h } from "./dom";
import { ago, duration, stamp } from "./format";
import { jsonBlock, pill, problemBox } from "./widgets";

type Action = "cancel" | "retry";

const EXPLAIN: Record<Action, string> = {
  cancel: "Cancels the instance and the running step's tasks; a worker holding one learns it on its next heartbeat.",
  retry: "Runs the instance again from the step that failed; the outputs of the steps before it are kept.",
};

export class InstanceDetail {
  private inst: Instance | null = null;
  private open: Action | null = null;
  private readonly head = h("div", { class: "detail-head" });
  private readonly actions = h("div", { class: "detail-actions" });
  private readonly confirm = h("div", { class: "confirm-slot" });
  private readonly notice = h("div", { class: "notice-slot" });
  private readonly body = h("div", { class: "detail-body" });

  constructor(
    readonly id: string,
    private readonly onUnreachable: (err: ApiError | null) => void,
    private readonly can: { cancel: boolean; retry: boolean },
  ) {}

  mount(root: HTMLElement): void {
    fill(
      root,
      h("a", { href: "#/instances", class: "back" }, "← All instances"),
      h("div", { class: "card detail" }, this.head, this.actions, this.confirm, this.notice, this.body),
    );
  }

  isLive(): boolean {
    return !this.inst || this.inst.status === "running";
  }

  async load(): Promise<void> {
    try {
      this.inst = await api.instance(this.id);
      this.onUnreachable(null);
      this.render();
    } catch (err) {
      if (err instanceof ApiError && err.unreachable) {
        this.onUnreachable(err);
        if (this.inst) return;
      }
      this.inst = null;
      fill(this.head, h("h2", { class: "mono" }, this.id));
      fill(this.actions);
      fill(this.body, problemBox(err, "Could not load the instance: "));
    }
  }

  private render(): void {
    const i = this.inst;
    if (!i) return;
    fill(
      this.head,
      h(
        "div",
        null,
        h("h2", { class: "mono", "data-testid": "instance-id" }, i.id),
        h("div", { class: "muted" }, `sequence ${i.sequence} v${i.version} · created ${stamp(i.created_at)}`, i.finished_at ? ` · finished ${stamp(i.finished_at)}` : ""),
      ),
      h("div", { "data-testid": "instance-status" }, pill(i.status, "large")),
    );
    const buttons: HTMLElement[] = [];
    if (this.can.cancel) buttons.push(this.button("cancel", i.status === "running"));
    if (this.can.retry) buttons.push(this.button("retry", i.status === "failed"));
    fill(
      this.actions,
      buttons,
      this.can.retry ? null : h("div", { class: "muted small", "data-testid": "no-retry" }, this.can.cancel ? "Retry needs an operator or admin key." : "Cancel and retry need a producer, operator or admin key."),
    );
    fill(
      this.body,
      i.error
        ? h(
            "section",
            { class: "error-card", "data-testid": "instance-error" },
            h("div", { class: "problem-head" }, h("strong", null, "Error"), h("span", { class: "problem-code" }, i.error.code)),
            h("pre", { class: "wrap" }, i.error.message),
          )
        : null,
      stepTimeline(i),
      h("div", { class: "json-grid" }, jsonBlock("Input", i.input, "instance-input"), jsonBlock("Output", i.output, "instance-output")),
    );
  }

  private button(a: Action, enabled: boolean): HTMLElement {
    return h(
      "button",
      {
        class: `btn${a === "cancel" ? " danger-outline" : ""}${this.open === a ? " active" : ""}`,
        "data-instance-action": a,
        disabled: !enabled,
        title: enabled ? EXPLAIN[a] : `Not possible for a ${this.inst?.status} instance`,
        onclick: () => this.ask(a),
      },
      a === "cancel" ? "Cancel…" : "Retry…",
    );
  }

  private ask(action: Action): void {
    this.open = action;
    fill(this.notice);
    const problem = h("div");
    const reason = h("input", { type: "text", name: "reason", placeholder: "no longer needed" });
    const go = h("button", { class: `btn ${action === "retry" ? "primary" : "danger"}`, "data-confirm": action }, `Confirm ${action}`);
    go.addEventListener("click", async () => {
      go.setAttribute("disabled", "");
      try {
        if (action === "cancel") await api.cancelInstance(this.id, reason.value ? { reason: reason.value } : {});
        else await api.retryInstance(this.id);
        this.open = null;
        fill(this.confirm);
        fill(this.notice, h("div", { class: "notice", role: "status" }, `Done: instance ${action === "cancel" ? "cancelled" : "retried"}.`));
      } catch (err) {
        go.removeAttribute("disabled");
        fill(problem, problemBox(err, `Could not ${action} the instance: `));
      }
      await this.load();
    });
    fill(
      this.confirm,
      h(
        "div",
        { class: "confirm", "data-testid": "confirm" },
        h("h3", null, `${action === "cancel" ? "Cancel" : "Retry"} this instance?`),
        h("p", { class: "muted" }, EXPLAIN[action]),
        action === "cancel" ? h("div", { class: "fields" }, h("label", { class: "field wide" }, h("span", null, "Reason (optional)"), reason)) : null,
        problem,
        h("div", { class: "row" }, go, h("button", { class: "btn", onclick: () => this.close() }, "Back")),
      ),
    );
    this.render();
  }

  private close(): void {
    this.open = null;
    fill(this.confirm);
    this.render();
  }
}

/** The steps in order; a parallel group's children are nested under the group's row. */
function stepTimeline(i: Instance): HTMLElement {
  const ids = new Set(i.steps.map((s) => s.id));
  const top = i.steps.filter((s) => !s.group || !ids.has(s.group));
  const children = (g: string) => i.steps.filter((s) => s.group === g);
  return h(
    "section",
    { class: "timeline steps", "data-testid": "steps" },
    h("h3", null, `Steps (${top.length})`),
    h(
      "ol",
      null,
      top.map((s) => {
        const kids = children(s.id);
        return stepItem(s, kids.length ? "group" : "step", kids.length ? h("ol", { class: "parallel", "data-group": s.id }, kids.map((k) => stepItem(k, "child"))) : null);
      }),
      i.on_error ? stepItem(i.on_error, "on_error") : null,
    ),
  );
}

function stepItem(s: StepRun, kind: "step" | "group" | "child" | "on_error", nested: HTMLElement | null = null): HTMLElement {
  const href = s.task_id ? `#/tasks/${encodeURIComponent(s.task_id)}` : null;
  const ran = s.started_at && s.finished_at ? Date.parse(s.finished_at) - Date.parse(s.started_at) : null;
  return h(
    "li",
    { class: `attempt step step-${kind} outcome-${s.status}`, "data-step": kind === "on_error" ? "on_error" : s.id, "data-step-status": s.status },
    h("span", { class: "node" }),
    h(
      "div",
      { class: "attempt-head" },
      h("b", { class: "mono" }, kind === "on_error" ? "on_error" : s.id),
      pill(s.status),
      kind === "group" ? h("span", { class: "chip", "data-testid": "parallel" }, "parallel") : null,
      kind === "on_error" ? h("span", { class: "chip", "data-testid": "on-error" }, "sequence on_error") : null,
      s.fallback ? h("span", { class: "chip chip-warn", "data-testid": "fallback", title: "The step failed; its fallback ran (or runs) instead" }, "fallback") : null,
      href ? h("a", { href, class: "mono small", "data-task-link": s.task_id }, s.task_id) : kind === "group" ? null : h("span", { class: "muted small" }, "no task"),
      kind === "group" ? null : h("span", { class: "muted small", "data-attempts": s.attempts }, `${s.attempts} attempt${s.attempts === 1 ? "" : "s"}`),
    ),
    h(
      "div",
      { class: "attempt-timing small" },
      "started ",
      h("b", { title: stamp(s.started_at) }, s.started_at ? stamp(s.started_at) : "—"),
      " · finished ",
      h("b", { title: stamp(s.finished_at) }, s.finished_at ? `${stamp(s.finished_at)} (${ago(s.finished_at)})` : "—"),
      ran !== null ? ` · took ${duration(ran)}` : "",
    ),
    s.error
      ? h(
          "div",
          { class: "attempt-error", "data-testid": "step-error" },
          s.fallback && s.status !== "failed" ? h("span", { class: "muted" }, "failed before its fallback: ") : null,
          h("code", null, s.error.code),
          " ",
          s.error.message,
        )
      : null,
    s.output !== null && s.output !== undefined ? h("pre", { class: "step-output", "data-testid": "step-output" }, JSON.stringify(s.output)) : null,
    nested,
  );
}
