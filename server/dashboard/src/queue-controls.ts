// The operator controls of one queue: pause (behind a confirmation step) and resume
// (P-CTRL-1), the queue's running cap and its handlers' caps (P-CTRL-2). The elements are
// built once and only their texts follow each refresh, so a half-typed cap survives it.
import { api, type HandlerControl, type QueueControl } from "./api";
import { fill, h } from "./dom";
import { stamp } from "./format";
import { problemBox } from "./widgets";

export interface ControlsState {
  control: QueueControl | null;
  /** Running tasks of the queue now (all handlers). */
  running: number;
  /** Handlers seen on this queue, with their caps (a handler cap holds on every queue). */
  handlers: { name: string; control: HandlerControl | null }[];
}

const PAUSE_EXPLAIN =
  "Polls on every replica stop claiming this queue's tasks from now on. Enqueues are still accepted and running tasks are not touched. Resume hands the tasks out again at once.";

/** "4" -> 4; empty -> a message; 0 or 2.5 are sent as typed so the server's 422 explains them. */
function capValue(input: HTMLInputElement): number {
  const n = Number(input.value.trim());
  if (input.value.trim() === "" || !Number.isFinite(n)) throw new Error("type a number of running tasks, or remove the cap");
  return n;
}

function handlerName(input: HTMLInputElement): string {
  const name = input.value.trim();
  if (!name) throw new Error("type the handler's name");
  return name;
}

/** Pause, resume and caps of one queue and its handlers; `update` follows each refresh. */
export class QueueControls {
  readonly el: HTMLElement;
  private state: ControlsState = { control: null, running: 0, handlers: [] };
  private confirming = false;
  private readonly pauseBtn = h("button", { class: "btn danger-outline", "data-control-action": "pause" }, "Pause…");
  private readonly resumeBtn = h("button", { class: "btn primary", "data-control-action": "resume" }, "Resume");
  private readonly stateText = h("span", { class: "muted", "data-testid": "pause-state" });
  private readonly confirm = h("div", { class: "confirm-slot" });
  private readonly message = h("div", { class: "message-slot", "data-testid": "control-message" });
  private readonly queueCap = h("input", { type: "number", min: 1, step: 1, name: "queue-cap", placeholder: "no cap", "aria-label": "queue running cap" });
  private readonly queueCapText = h("span", { class: "muted", "data-testid": "queue-cap-state" });
  private readonly handlerRows = h("tbody");
  private readonly rowFor = new Map<string, { tr: HTMLElement; text: HTMLElement }>();
  private readonly otherName = h("input", { type: "text", name: "other-handler", placeholder: "handler name", "aria-label": "handler name", spellcheck: "false" });
  private readonly otherCap = h("input", { type: "number", min: 1, step: 1, name: "other-handler-cap", placeholder: "cap", "aria-label": "handler running cap" });

  constructor(
    readonly queue: string,
    private readonly refresh: () => Promise<void>,
  ) {
    this.pauseBtn.addEventListener("click", () => this.askPause());
    this.resumeBtn.addEventListener("click", () => void this.run("resume", () => api.resumeQueue(queue), `Queue ${queue} resumed.`));
    const capForm = (input: HTMLInputElement, set: (n: number | null) => Promise<unknown>, what: string, key: string) => [
      input,
      h("button", { class: "btn small", "data-cap-set": key, onclick: () => void this.run(`set the cap of ${what}`, () => set(capValue(input)), `Cap of ${what} set.`, input) }, "Set cap"),
      h("button", { class: "btn small", "data-cap-clear": key, onclick: () => void this.run(`remove the cap of ${what}`, () => set(null), `Cap of ${what} removed.`, input) }, "Remove cap"),
    ];
    this.el = h(
      "div",
      { class: "queue-controls", "data-testid": "queue-controls" },
      h(
        "div",
        { class: "control-row" },
        h("h3", null, "Delivery"),
        this.pauseBtn,
        this.resumeBtn,
        this.stateText,
      ),
      this.confirm,
      h(
        "div",
        { class: "control-row" },
        h("h3", null, "Queue cap"),
        capForm(this.queueCap, (n) => api.setQueueLimit(queue, n), `queue ${queue}`, "queue"),
        this.queueCapText,
      ),
      h(
        "div",
        { class: "control-block" },
        h("h3", null, "Handler caps", h("span", { class: "muted small" }, " · a handler's cap counts its running tasks on every queue")),
        h(
          "table",
          { class: "grid handler-caps-table" },
          h("thead", null, h("tr", null, h("th", null, "Handler"), h("th", null, "Cap · running (all queues)"), h("th", null, "New cap"))),
          this.handlerRows,
        ),
        h(
          "div",
          { class: "control-row other-handler" },
          h("span", { class: "muted small" }, "Another handler:"),
          this.otherName,
          capForm(this.otherCap, (n) => api.setHandlerLimit(handlerName(this.otherName), n), "that handler", "other"),
        ),
      ),
      this.message,
    );
  }

  update(state: ControlsState): void {
    this.state = state;
    const c = state.control;
    const paused = c?.paused ?? false;
    this.pauseBtn.disabled = paused || this.confirming;
    this.resumeBtn.disabled = !paused;
    this.stateText.textContent = paused
      ? `paused since ${stamp(c?.paused_at)}: no poll claims its tasks`
      : "handing out tasks";
    this.stateText.dataset.paused = String(paused);
    const cap = c?.max_running ?? null;
    this.queueCapText.textContent = cap === null ? `no cap · ${state.running} running` : `at most ${cap} running · ${state.running} running now`;
    this.queueCap.placeholder = cap === null ? "no cap" : String(cap);
    for (const { name, control } of state.handlers) this.handlerRow(name, control);
    if (state.handlers.length === 0 && this.rowFor.size === 0) {
      fill(this.handlerRows, h("tr", null, h("td", { colspan: 3, class: "muted" }, "No task of this queue yet: cap any handler below.")));
    }
  }

  private handlerRow(name: string, control: HandlerControl | null): void {
    let row = this.rowFor.get(name);
    if (!row) {
      if (this.rowFor.size === 0) fill(this.handlerRows);
      const input = h("input", { type: "number", min: 1, step: 1, name: `handler-cap-${name}`, placeholder: "no cap", "aria-label": `running cap of ${name}` });
      const text = h("td", { "data-testid": "handler-cap-state" });
      const tr = h(
        "tr",
        { "data-cap-handler": name },
        h("td", { class: "mono" }, name),
        text,
        h(
          "td",
          { class: "cap-form" },
          input,
          h("button", { class: "btn small", "data-cap-set": name, onclick: () => void this.run(`set the cap of handler ${name}`, () => api.setHandlerLimit(name, capValue(input)), `Cap of handler ${name} set.`, input) }, "Set cap"),
          h("button", { class: "btn small", "data-cap-clear": name, onclick: () => void this.run(`remove the cap of handler ${name}`, () => api.setHandlerLimit(name, null), `Cap of handler ${name} removed.`, input) }, "Remove cap"),
        ),
      );
      row = { tr, text };
      this.rowFor.set(name, row);
      this.handlerRows.append(tr);
    }
    const cap = control?.max_running ?? null;
    row.text.textContent = cap === null ? "no cap" : `≤ ${cap} · ${control?.running ?? 0} running`;
    const input = row.tr.querySelector("input");
    if (input) input.placeholder = cap === null ? "no cap" : String(cap);
  }

  /** Pausing stops delivery: like the task actions, it asks first. */
  private askPause(): void {
    this.confirming = true;
    this.pauseBtn.disabled = true;
    const go = h("button", { class: "btn danger", "data-confirm": "pause" }, "Confirm pause");
    go.addEventListener("click", async () => {
      go.disabled = true;
      if (await this.run("pause", () => api.pauseQueue(this.queue), `Queue ${this.queue} paused.`)) this.closeConfirm();
      else go.disabled = false;
    });
    fill(
      this.confirm,
      h(
        "div",
        { class: "confirm", "data-testid": "confirm" },
        h("h3", null, `Pause queue ${this.queue}?`),
        h("p", { class: "muted" }, PAUSE_EXPLAIN),
        h("div", { class: "row" }, go, h("button", { class: "btn", onclick: () => this.closeConfirm() }, "Back")),
      ),
    );
  }

  private closeConfirm(): void {
    this.confirming = false;
    fill(this.confirm);
    this.update(this.state);
  }

  /** Apply one control; a problem shows its title and code (RFC 9457), like every action. */
  private async run(what: string, action: () => Promise<unknown>, done: string, input?: HTMLInputElement): Promise<boolean> {
    fill(this.message);
    try {
      await action();
      if (input) input.value = "";
      fill(this.message, h("div", { class: "notice", role: "status" }, done));
      await this.refresh();
      return true;
    } catch (err) {
      fill(this.message, problemBox(err, `Could not ${what}: `));
      return false;
    }
  }
}
