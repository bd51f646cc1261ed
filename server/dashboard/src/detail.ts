// One task: everything GET /tasks/{id} and /attempts say, plus the operator actions
// complete / fail (P-MANUAL-1), cancel (P-CANCEL-1) and retry (P-RETRY-6), each behind a
// confirmation step. The actions are operator calls (P-AUTH-2): other keys get none.
import { api, ApiError, type Attempt, type Task, type TaskStatus } from "./api";
import { fill, h } from "./dom";
import { ago, duration, precise, stamp } from "./format";
import { attemptTimings, traceId } from "./telemetry";
import { workflowOf } from "./tasks";
import { whyPanel } from "./why";
import { jsonBlock, pill, problemBox } from "./widgets";

type Action = "complete" | "fail" | "cancel" | "retry";

const ALLOWED: Record<Action, TaskStatus[]> = {
  complete: ["pending", "scheduled", "running"], // P-MANUAL-1
  fail: ["pending", "scheduled", "running"], // P-MANUAL-1
  cancel: ["pending", "scheduled", "running"], // P-CANCEL-1
  retry: ["failed", "cancelled", "expired"], // P-RETRY-6
};

const EXPLAIN: Record<Action, string> = {
  complete:
    "Marks the task completed with this output. If a worker is running it, that attempt ends cancelled: the worker sees lease_lost and its own result is refused.",
  fail: "Fails the task permanently, without further attempts. A running attempt ends cancelled and its worker sees lease_lost.",
  cancel: "Cancels the task. A running worker learns it on its next heartbeat (cancel_requested).",
  retry: "Puts the task back in its queue as pending, with a fresh budget of attempts.",
};

const DONE: Record<Action, string> = { complete: "completed", fail: "failed", cancel: "cancelled", retry: "retried" };

const LIVE: TaskStatus[] = ["pending", "scheduled", "running"];

export class TaskDetail {
  private task: Task | null = null;
  private attempts: Attempt[] = [];
  private attemptsForbidden = false;
  private open: Action | null = null;
  private readonly head = h("div", { class: "detail-head" });
  private readonly why = h("div", { class: "why-slot" });
  private readonly actions = h("div", { class: "detail-actions" });
  private readonly confirm = h("div", { class: "confirm-slot" });
  private readonly notice = h("div", { class: "notice-slot" });
  private readonly body = h("div", { class: "detail-body" });

  constructor(
    readonly id: string,
    private readonly onUnreachable: (err: ApiError | null) => void,
    private readonly operate: boolean,
  ) {}

  mount(root: HTMLElement): void {
    fill(
      root,
      h("a", { href: "#/", class: "back" }, "← All tasks"),
      h("div", { class: "card detail" }, this.head, this.why, this.actions, this.confirm, this.notice, this.body),
    );
  }

  isLive(): boolean {
    return !this.task || LIVE.includes(this.task.status);
  }

  async load(): Promise<void> {
    try {
      // A producer key may read the task but not its attempts (operator, P-AUTH-2).
      const [task, attempts] = await Promise.all([api.task(this.id), api.attempts(this.id).catch(unlessForbidden)]);
      this.task = task;
      this.attempts = attempts?.attempts ?? [];
      this.attemptsForbidden = attempts === null;
      this.onUnreachable(null);
      this.render();
    } catch (err) {
      if (err instanceof ApiError && err.unreachable) {
        this.onUnreachable(err);
        // Keep a task already shown (the banner marks it stale); never show an empty view.
        if (this.task) return;
      }
      this.task = null;
      fill(this.head, h("h2", { class: "mono" }, this.id));
      fill(this.why);
      fill(this.actions);
      fill(this.body, problemBox(err, "Could not load the task: "));
    }
  }

  private render(): void {
    const t = this.task;
    if (!t) return;
    fill(
      this.head,
      h("div", null, h("h2", { class: "mono", "data-testid": "task-id" }, t.id), h("div", { class: "muted" }, `${t.handler_name} on queue ${t.queue_name} · priority ${t.priority}`), instanceLink(t)),
      h("div", { "data-testid": "task-status" }, pill(t.status, "large")),
    );
    fill(this.why, whyPanel(t));
    fill(
      this.actions,
      this.operate
        ? (Object.keys(ALLOWED) as Action[]).map((a) =>
            h(
              "button",
              {
                class: `btn${a === "fail" || a === "cancel" ? " danger-outline" : ""}${this.open === a ? " active" : ""}`,
                "data-action": a,
                disabled: !ALLOWED[a].includes(t.status),
                title: ALLOWED[a].includes(t.status) ? EXPLAIN[a] : `Not possible for a ${t.status} task`,
                onclick: () => this.ask(a),
              },
              { complete: "Complete…", fail: "Fail…", cancel: "Cancel…", retry: "Retry…" }[a],
            ),
          )
        : h("div", { class: "muted small", "data-testid": "no-actions" }, "Complete, fail, cancel and retry need an operator or admin key."),
    );
    fill(
      this.body,
      facts(t),
      errorCard(t),
      jsonGrid(t),
      this.attemptsForbidden
        ? h("section", { class: "timeline", "data-testid": "attempts" }, h("h3", null, "Attempts"), h("div", { class: "muted" }, "The attempts need an operator or admin key (403 forbidden)."))
        : timeline(t, this.attempts),
    );
  }

  private ask(action: Action): void {
    this.open = action;
    fill(this.notice);
    const problem = h("div");
    const fields = actionFields(action);
    const go = h("button", { class: `btn ${action === "complete" || action === "retry" ? "primary" : "danger"}`, "data-confirm": action }, `Confirm ${action}`);
    go.addEventListener("click", async () => {
      go.setAttribute("disabled", "");
      try {
        await this.apply(action, fields.values());
        this.open = null;
        fill(this.confirm);
        fill(this.notice, h("div", { class: "notice", role: "status" }, `Done: task ${DONE[action]} by hand.`));
        await this.load();
      } catch (err) {
        go.removeAttribute("disabled");
        fill(problem, problemBox(err, `Could not ${action} the task: `));
        await this.load(); // the task probably changed under us: show what it is now
      }
    });
    fill(
      this.confirm,
      h(
        "div",
        { class: "confirm", "data-testid": "confirm" },
        h("h3", null, `${action[0].toUpperCase()}${action.slice(1)} this task?`),
        h("p", { class: "muted" }, EXPLAIN[action]),
        fields.el,
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

  private async apply(action: Action, v: Record<string, string>): Promise<void> {
    if (action === "complete") {
      let output: unknown = null;
      if (v.output.trim()) {
        try {
          output = JSON.parse(v.output);
        } catch (err) {
          throw new Error(`the output is not valid JSON (${(err as Error).message})`);
        }
      }
      await api.complete(this.id, { output, ...(v.reason ? { reason: v.reason } : {}) });
    } else if (action === "fail") {
      if (!v.error.trim()) throw new Error("say why the task failed");
      await api.fail(this.id, { error: v.error, ...(v.code ? { code: v.code } : {}) });
    } else if (action === "cancel") {
      await api.cancel(this.id, v.reason ? { reason: v.reason } : {});
    } else {
      await api.retry(this.id, {});
    }
  }
}

/** P-WF-4: a step task's context names its instance (and step): link to the instance page. */
function instanceLink(t: Task): HTMLElement | null {
  const wf = workflowOf(t);
  if (!wf) return null;
  return h(
    "div",
    { class: "small", "data-testid": "instance-link" },
    "step ",
    wf.step ? h("b", { class: "mono" }, wf.step) : "?",
    " of workflow instance ",
    h("a", { href: `#/instances/${encodeURIComponent(wf.instance)}`, class: "mono" }, wf.instance),
  );
}

/** A 403 becomes null (the view says what this key cannot read); anything else is thrown. */
function unlessForbidden(err: unknown): null {
  if (err instanceof ApiError && err.status === 403) return null;
  throw err;
}

function actionFields(action: Action): { el: HTMLElement; values: () => Record<string, string> } {
  const inputs: Record<string, HTMLInputElement | HTMLTextAreaElement> = {};
  const field = (name: string, label: string, el: HTMLInputElement | HTMLTextAreaElement) => {
    inputs[name] = el;
    el.name = name;
    return h("label", { class: "field wide" }, h("span", null, label), el);
  };
  const rows: HTMLElement[] = [];
  if (action === "complete") {
    rows.push(field("output", "Output (JSON)", h("textarea", { rows: 3, spellcheck: "false", placeholder: "{ }" })));
    rows.push(field("reason", "Reason (optional)", h("input", { type: "text", placeholder: "approved by hand" })));
  } else if (action === "fail") {
    rows.push(field("error", "Error message", h("input", { type: "text", placeholder: "upstream account closed" })));
    rows.push(field("code", "Code (optional)", h("input", { type: "text", placeholder: "manual" })));
  } else if (action === "cancel") {
    rows.push(field("reason", "Reason (optional)", h("input", { type: "text", placeholder: "customer withdrew the order" })));
  }
  return {
    el: h("div", { class: "fields" }, rows),
    values: () => Object.fromEntries(Object.entries(inputs).map(([k, el]) => [k, el.value])),
  };
}

function facts(t: Task): HTMLElement {
  const row = (label: string, value: Node | string, id?: string) =>
    h("div", { class: "fact", "data-fact": id ?? null }, h("dt", null, label), h("dd", null, value));
  const when = (iso: string | null) => (iso ? h("span", { title: stamp(iso) }, `${stamp(iso)} (${ago(iso)})`) : h("span", { class: "muted" }, "—"));
  const lease = t.lease
    ? h(
        "span",
        null,
        h("span", { class: "mono" }, t.lease.worker_id ?? "anonymous poller"),
        ` · attempt ${t.lease.attempt} · expires ${ago(t.lease.expires_at)} `,
        h("span", { class: "muted mono small" }, t.lease.id),
      )
    : h("span", { class: "muted" }, "none (not running)");
  return h(
    "dl",
    { class: "facts" },
    traceFact(t),
    row("Attempt", `${t.attempt} of ${t.max_attempts}`),
    row("Lease holder", lease, "lease"),
    row("Worker (latest)", t.worker_id ?? "—"),
    row("Created", when(t.created_at)),
    row("Run at", when(t.run_at)),
    row("Started", when(t.started_at)),
    row("Finished", when(t.finished_at)),
    row("Next attempt", when(t.next_attempt_at)),
    row("Good until", when(t.good_until)),
    row("Updated", when(t.updated_at)),
    row("Idempotency key", t.idempotency_key ?? "—"),
    row("Retry policy", `${t.retry.max_attempts} attempts, ${duration(t.retry.initial_backoff_ms)} × ${t.retry.backoff_multiplier}, cap ${duration(t.retry.max_backoff_ms)}`),
    t.cancel_reason ? row("Cancel reason", t.cancel_reason) : null,
  ) as HTMLElement;
}

/** P-TEL-1: the trace id of the task's `traceparent`, with a copy button; nothing without one. */
function traceFact(t: Task): HTMLElement | null {
  const id = traceId(t.headers);
  if (!id) return null;
  const value = h("span", { class: "mono", "data-testid": "trace-id" }, id);
  const copy = h("button", { class: "btn small", "data-testid": "copy-trace-id", title: "Copy the trace id, to look it up in your tracing backend" }, "Copy");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(id);
      copy.textContent = "Copied";
    } catch {
      // No clipboard (an insecure origin, or permission refused): select it for Ctrl+C.
      getSelection()?.selectAllChildren(value);
      copy.textContent = "Selected: press Ctrl+C";
    }
  });
  return h("div", { class: "fact trace", "data-fact": "trace" }, h("dt", null, "Trace id"), h("dd", null, value, " ", copy));
}

function errorCard(t: Task): HTMLElement | null {
  if (!t.error) return null;
  const e = t.error;
  return h(
    "section",
    { class: "error-card", "data-testid": "task-error" },
    h("div", { class: "problem-head" }, h("strong", null, t.status === "failed" ? "Error" : "Latest error"), h("span", { class: "problem-code" }, e.code), e.retryable ? h("span", { class: "chip" }, "retryable") : null),
    h("pre", { class: "wrap" }, e.message),
    e.details ? h("pre", null, JSON.stringify(e.details, null, 2)) : null,
  );
}

function jsonGrid(t: Task): HTMLElement {
  return h(
    "div",
    { class: "json-grid" },
    jsonBlock("Params", t.params, "params"),
    jsonBlock("Context", t.context, "context"),
    jsonBlock("Output", t.output, "output"),
    jsonBlock("Checkpoint", t.checkpoint, "checkpoint"),
    jsonBlock("Progress", t.progress, "progress"),
    jsonBlock("Headers", t.headers, "headers"),
  );
}

function timeline(t: Task, attempts: Attempt[]): HTMLElement {
  const timings = attemptTimings(t, attempts);
  return h(
    "section",
    { class: "timeline", "data-testid": "attempts" },
    h("h3", null, `Attempts (${attempts.length})`),
    attempts.length === 0
      ? h("div", { class: "muted" }, "No attempt yet: no worker has claimed this task.")
      : h(
          "ol",
          null,
          attempts.map((a) =>
            h(
              "li",
              { class: `attempt outcome-${a.outcome}`, "data-attempt": a.attempt },
              h("span", { class: "node" }),
              h(
                "div",
                { class: "attempt-head" },
                h("b", null, `#${a.attempt}`),
                pill(a.outcome),
                h("span", { class: "mono small" }, a.worker_id ?? "anonymous poller"),
                h("span", { class: "muted small", title: `${stamp(a.started_at)} → ${stamp(a.ended_at)}` }, stamp(a.started_at)),
              ),
              attemptTiming(timings.get(a.attempt)),
              a.error ? h("div", { class: "attempt-error" }, h("code", null, a.error.code), " ", a.error.message) : null,
            ),
          ),
        ),
  );
}

/** "queue wait 1.42 s · run time 35 ms"; data-ms carries the exact figure (README: definitions). */
function attemptTiming(timing: { waitMs: number | null; runMs: number | null } | undefined): HTMLElement {
  const wait = timing?.waitMs ?? null;
  const run = timing?.runMs ?? null;
  return h(
    "div",
    { class: "attempt-timing small" },
    "queue wait ",
    wait === null
      ? h("b", { "data-wait": "", title: "Not known: the API keeps only the latest attempt's ready time (the task's run_at)" }, "—")
      : h("b", { "data-wait": "", "data-ms": wait, title: "From when the attempt became claimable (later of created_at and run_at) to its claim" }, precise(wait)),
    " · run time ",
    run === null
      ? h("b", { "data-run": "" }, "still running")
      : h("b", { "data-run": "", "data-ms": run, title: "From the claim (started_at) to the attempt's end (ended_at)" }, precise(run)),
  );
}
