// The worker table (GET /workers) with the operator directives of P-WORKER-4 (operator
// and admin keys only, P-AUTH-2).
import { api, type Worker } from "./api";
import { h, fill, refill } from "./dom";
import { ago, stamp } from "./format";
import { empty, pill, problemBox } from "./widgets";

type Action = "quiet" | "resume" | "terminate";

// Terminate asks twice: the first click arms the button for a few seconds. The armed
// worker survives re-renders (the table is rebuilt on every refresh).
let armed: { worker: string; until: number } | null = null;
const ARM_MS = 5000;

export interface WorkerHooks {
  /** Whether the key may send directives: without it, no buttons are rendered. */
  operate: boolean;
  /** Re-fetch and re-render after an action. */
  refresh: () => void;
  /** Show an error above the table. */
  error: (box: HTMLElement | null) => void;
  /** Filter the task list by this worker. */
  pickWorker: (id: string) => void;
}

export function renderWorkers(el: HTMLElement, workers: Worker[], hooks: WorkerHooks): void {
  if (workers.length === 0) {
    fill(el, empty("No registered workers. Workers that only poll (curl, say) show up as pollers on the queues above."));
    return;
  }
  const head = ["Worker", "State", "Handlers", "In flight", "Last seen", ...(hooks.operate ? [""] : [])].map((t) =>
    h("th", { class: t === "In flight" ? "num" : null }, t),
  );
  const table = h(
    "table",
    { class: "grid workers" },
    h("thead", null, h("tr", null, head)),
    h("tbody", null, workers.map((w) => workerRow(w, hooks))),
  );
  refill(el, h("div", { class: "table-wrap" }, table));
}

function workerRow(w: Worker, hooks: WorkerHooks): HTMLElement {
  const live = w.state !== "dead" && w.state !== "deregistered";
  const act = (action: Action) => async () => {
    if (action === "terminate" && !(armed && armed.worker === w.worker_id && armed.until > Date.now())) {
      armed = { worker: w.worker_id, until: Date.now() + ARM_MS };
      hooks.refresh();
      return;
    }
    armed = null;
    try {
      await api.directive(w.worker_id, action);
      hooks.error(null);
    } catch (err) {
      hooks.error(problemBox(err, `${action} ${w.worker_id}: `));
    }
    hooks.refresh();
  };
  const isArmed = armed?.worker === w.worker_id && armed.until > Date.now();
  const pending = w.directive !== "running" && w.state === "running";
  return h(
    "tr",
    { "data-worker": w.worker_id },
    h(
      "td",
      null,
      h("a", { href: "#", class: "mono", title: "Show this worker's tasks", onclick: (ev: Event) => {
        ev.preventDefault();
        hooks.pickWorker(w.worker_id);
      } }, w.worker_id),
      h("div", { class: "muted small" }, [w.hostname, w.pid !== null ? `pid ${w.pid}` : null, w.sdk].filter(Boolean).join(" · ")),
    ),
    h(
      "td",
      null,
      pill(w.state),
      pending ? h("div", { class: "muted small", "data-directive": w.directive }, `${w.directive} requested`) : null,
    ),
    h("td", null, w.handlers.length ? w.handlers.map((n) => h("span", { class: "chip" }, n)) : h("span", { class: "muted" }, "any")),
    h("td", { class: "num", "data-testid": "in-flight" }, `${w.active_tasks}`, w.concurrency !== null ? h("span", { class: "muted" }, ` / ${w.concurrency}`) : null),
    h("td", { title: stamp(w.last_heartbeat_at) }, ago(w.last_heartbeat_at)),
    hooks.operate && h(
      "td",
      { class: "actions" },
      h("button", { class: "btn small", disabled: !live || w.directive === "quiet", onclick: act("quiet"), title: "Stop claiming new tasks, finish in-flight work" }, "Quiet"),
      h("button", { class: "btn small", disabled: !live || w.directive === "running", onclick: act("resume"), title: "Claim tasks again" }, "Resume"),
      h(
        "button",
        { class: `btn small danger${isArmed ? " armed" : ""}`, disabled: !live || w.directive === "terminate", onclick: act("terminate"), title: "Shut the worker down gracefully" },
        isArmed ? "Confirm terminate" : "Terminate",
      ),
    ),
  );
}
