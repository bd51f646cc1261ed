// One workflow instance (GET /instances/{id}): its state, input and output, and the block
// timeline of block-view.ts. Cancel (P-WF-7: producer, operator, admin) and retry from the
// failed step (P-WF-8: operator, admin), behind a confirmation.
import { api, ApiError, type Instance } from "./api";
import { type BlockDef, definitionIndex } from "./blocks";
import { stepTimeline, type TimelineState } from "./block-view";
import { fill, h } from "./dom";
import { stamp } from "./format";
import { instanceWhyPanel } from "./why";
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
  private readonly why = h("div", { class: "why-slot" });
  private readonly actions = h("div", { class: "detail-actions" });
  private readonly confirm = h("div", { class: "confirm-slot" });
  private readonly notice = h("div", { class: "notice-slot" });
  private readonly body = h("div", { class: "detail-body" });
  private readonly timeline: TimelineState = { defs: null, shown: new Map(), only: new Map(), redraw: () => this.render() };
  private defsAsked = false;

  constructor(
    readonly id: string,
    private readonly onUnreachable: (err: ApiError | null) => void,
    private readonly can: { cancel: boolean; retry: boolean; readSequences: boolean },
  ) {}

  mount(root: HTMLElement): void {
    fill(
      root,
      h("a", { href: "#/instances", class: "back" }, "← All instances"),
      h("div", { class: "card detail" }, this.head, this.why, this.actions, this.confirm, this.notice, this.body),
    );
  }

  isLive(): boolean {
    return !this.inst || this.inst.status === "running";
  }

  async load(): Promise<void> {
    try {
      this.inst = await api.instance(this.id);
      this.onUnreachable(null);
      await this.loadDefinition(this.inst);
      this.render();
    } catch (err) {
      if (err instanceof ApiError && err.unreachable) {
        this.onUnreachable(err);
        if (this.inst) return;
      }
      this.inst = null;
      fill(this.head, h("h2", { class: "mono" }, this.id));
      fill(this.why);
      fill(this.actions);
      fill(this.body, problemBox(err, "Could not load the instance: "));
    }
  }

  /**
   * The sequence's blocks name every route of a router and the catch / finally lists not run
   * (the runs say only what ran). Read once: a version never changes. getSequence is an
   * operator call (P-AUTH-2): other keys do without it rather than meet a 403.
   */
  private async loadDefinition(i: Instance): Promise<void> {
    if (this.defsAsked || !this.can.readSequences) return;
    this.defsAsked = true;
    try {
      const seq = await api.sequence(i.sequence, i.version);
      this.timeline.defs = definitionIndex((seq.blocks ?? seq.steps) as BlockDef[]);
    } catch (err) {
      // Unreachable: ask again on the next load. Refused or gone: the timeline shows what
      // ran, and says so for routers.
      if (err instanceof ApiError && err.unreachable) this.defsAsked = false;
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
        // P-KEY-7: the key this instance counts against, and the limit it stated.
        i.concurrency_key
          ? h("div", { class: "muted small", "data-testid": "instance-key" }, "concurrency key ", h("code", null, i.concurrency_key), ` · at most ${i.max_concurrency ?? 1} of it at once`)
          : null,
        // Seed 001: the task list filtered by this instance, over any time range.
        h("a", { href: `#/?range=all&instance=${encodeURIComponent(i.id)}`, class: "small", "data-testid": "instance-tasks" }, "tasks of this instance →"),
      ),
      h("div", { "data-testid": "instance-status" }, pill(i.status, "large")),
    );
    fill(this.why, instanceWhyPanel(i));
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
      stepTimeline(i.steps, i.on_error, this.timeline),
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
