// The task list (GET /tasks): filters, cursor paging, and a refresh every few seconds while
// anything visible is still pending or running.
import { api, ApiError, TASK_STATUSES, type Task, type TaskStatus } from "./api";
import { byId, fill, h, refill } from "./dom";
import { ago, stamp } from "./format";
import { empty, pill, problemBox } from "./widgets";

export const RANGES = { "1h": 3600_000, "24h": 86400_000, "7d": 7 * 86400_000, all: 0 } as const;
export type Range = keyof typeof RANGES;
const RANGE_NAMES: Record<Range, string> = { "1h": "Last hour", "24h": "Last 24 h", "7d": "Last 7 days", all: "Any time" };

export interface Filters {
  range: Range;
  handler: string;
  queue: string;
  status: TaskStatus | "";
  worker: string;
  instance: string;
  id: string;
}

// Seed 001: the last hour by default, to keep the list query fast on a long task log.
export const NO_FILTERS: Filters = { range: "1h", handler: "", queue: "", status: "", worker: "", instance: "", id: "" };
const PAGE_SIZE = 25;
const TASK_ID = /^[A-Za-z0-9_-]{1,64}$/;
const LIVE: TaskStatus[] = ["pending", "running"];

export class TaskList {
  filters: Filters = { ...NO_FILTERS };
  private tasks: Task[] = [];
  private cursors: (string | undefined)[] = [undefined]; // cursor of each page seen so far
  private next: string | null = null;
  private loading = 0;

  constructor(
    private readonly onFiltersChanged: (f: Filters) => void,
    private readonly onUnreachable: (err: ApiError | null) => void,
  ) {}

  /** Build the filter bar once; the list body is re-rendered on every load. */
  mount(): void {
    const input = (id: keyof Filters, label: string, placeholder: string, list?: string) =>
      h(
        "label",
        { class: "field" },
        h("span", null, label),
        h("input", {
          id: `f-${id}`,
          type: "search",
          placeholder,
          list: list ?? null,
          autocomplete: "off",
          spellcheck: "false",
          oninput: debounce(() => this.set({ [id]: (byId<HTMLInputElement>(`f-${id}`).value || "").trim() })),
        }),
      );
    const select = (id: keyof Filters, label: string, options: [string, string][]) =>
      h(
        "label",
        { class: "field" },
        h("span", null, label),
        h(
          "select",
          { id: `f-${id}`, onchange: () => this.set({ [id]: byId<HTMLSelectElement>(`f-${id}`).value }) },
          options.map(([value, text]) => h("option", { value }, text)),
        ),
      );
    fill(
      byId("task-filters"),
      select("range", "Created", Object.entries(RANGE_NAMES)),
      select("status", "Status", [["", "Any status"], ...TASK_STATUSES.map((s): [string, string] => [s, s])]),
      input("handler", "Handler", "any handler", "dl-handlers"),
      input("queue", "Queue", "any queue", "dl-queues"),
      input("worker", "Worker", "any worker", "dl-workers"),
      input("instance", "Instance", "inst_…"),
      input("id", "Task id", "task_01…"),
      h("button", { class: "btn", id: "f-clear", onclick: () => this.set({ ...NO_FILTERS }) }, "Clear"),
      h("datalist", { id: "dl-handlers" }),
      h("datalist", { id: "dl-queues" }),
      h("datalist", { id: "dl-workers" }),
    );
    this.syncInputs();
  }

  /** Offer the handler, queue and worker names the dashboard has seen. */
  suggest(handlers: string[], queues: string[], workers: string[]): void {
    const opts = (names: string[]) => [...new Set(names)].sort().map((n) => h("option", { value: n }));
    fill(byId("dl-handlers"), opts(handlers));
    fill(byId("dl-queues"), opts(queues));
    fill(byId("dl-workers"), opts(workers));
  }

  /** Change filters (from the bar, a queue bar or a worker link): back to the first page. */
  set(change: Partial<Filters>): void {
    this.filters = { ...this.filters, ...change };
    this.cursors = [undefined];
    this.syncInputs();
    this.onFiltersChanged(this.filters);
    void this.load();
  }

  /** P-OBS: keep the view live only while something on it can still change by itself. */
  isLive(): boolean {
    return this.tasks.some((t) => LIVE.includes(t.status));
  }

  async load(): Promise<void> {
    const ticket = ++this.loading;
    const f = this.filters;
    const body = byId("task-list");
    try {
      let tasks: Task[];
      let next: string | null = null;
      if (f.id) {
        tasks = await this.byId(f.id);
      } else {
        const page = await api.tasks({
          limit: String(PAGE_SIZE),
          status: f.status || undefined,
          handler_name: f.handler || undefined,
          queue_name: f.queue || undefined,
          worker_id: f.worker || undefined,
          instance_id: f.instance || undefined,
          created_after: RANGES[f.range] ? new Date(Date.now() - RANGES[f.range]).toISOString() : undefined,
          cursor: this.cursors[this.cursors.length - 1],
        });
        tasks = page.tasks;
        next = page.next_cursor;
      }
      if (ticket !== this.loading) return; // a newer load started meanwhile: it wins
      this.tasks = tasks;
      this.next = next;
      this.onUnreachable(null);
      this.render();
    } catch (err) {
      if (ticket !== this.loading) return;
      if (err instanceof ApiError && err.unreachable) {
        this.onUnreachable(err);
        return; // keep the last list on screen; the banner says it is stale
      }
      this.tasks = [];
      fill(body, problemBox(err, "Could not list tasks: "));
      fill(byId("task-pager"));
    }
  }

  private async byId(id: string): Promise<Task[]> {
    if (!TASK_ID.test(id)) return [];
    try {
      return [await api.task(id)];
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return [];
      throw err;
    }
  }

  private render(): void {
    const f = this.filters;
    if (this.tasks.length === 0) {
      fill(byId("task-list"), empty(f.id ? `No task with id “${f.id}”.` : `No tasks match these filters${f.range === "all" ? "" : ` (created in the ${RANGE_NAMES[f.range].toLowerCase()}; widen Created for older ones)`}.`));
    } else {
      const head = ["Task", "Handler", "Queue", "Status", "Attempt", "Worker", "Instance", "Step", "Created", "Updated"].map((t) =>
        h("th", { class: t === "Attempt" ? "num" : null }, t),
      );
      const row = (t: Task) => taskRow(t, (instance) => this.set({ instance, id: "" }));
      const table = h("table", { class: "grid tasks" }, h("thead", null, h("tr", null, head)), h("tbody", null, this.tasks.map(row)));
      refill(byId("task-list"), h("div", { class: "table-wrap" }, table));
    }
    const page = this.cursors.length;
    refill(
      byId("task-pager"),
      h(
        "span",
        { class: "muted", "data-testid": "page-info" },
        f.id ? "Looked up by id; other filters ignored" : `Page ${page} · ${this.tasks.length} task${this.tasks.length === 1 ? "" : "s"}`,
      ),
      this.isLive() ? h("span", { class: "live", title: "Pending or running tasks are shown: refreshing every 3 s" }, h("span", { class: "dot" }), "live") : null,
      h("span", { class: "spacer" }),
      h("button", { class: "btn", id: "page-refresh", title: "Load this page again", onclick: () => void this.load() }, "Refresh"),
      h("button", { class: "btn", id: "page-newer", disabled: page === 1 || !!f.id, onclick: () => this.page(-1) }, "← Newer"),
      h("button", { class: "btn", id: "page-older", disabled: !this.next || !!f.id, onclick: () => this.page(1) }, "Older →"),
    );
  }

  private page(step: 1 | -1): void {
    if (step === 1 && this.next) this.cursors.push(this.next);
    if (step === -1 && this.cursors.length > 1) this.cursors.pop();
    void this.load();
  }

  private syncInputs(): void {
    for (const key of Object.keys(this.filters) as (keyof Filters)[]) {
      const el = document.getElementById(`f-${key}`) as HTMLInputElement | HTMLSelectElement | null;
      if (el && el.value !== this.filters[key] && document.activeElement !== el) el.value = this.filters[key];
    }
  }
}

/**
 * P-WF-4: a workflow step's task names its instance and step in `context`; inside a loop or
 * for_each iteration the step's run is `step_key` (`items[3]/charge`), which says which one.
 */
export function workflowOf(t: Task): { instance: string; step: string | null } | null {
  const ctx = (t.context ?? {}) as Record<string, unknown>;
  if (typeof ctx.instance_id !== "string" || !ctx.instance_id) return null;
  const step = [ctx.step_key, ctx.step_id].find((v): v is string => typeof v === "string" && v !== "");
  return { instance: ctx.instance_id, step: step ?? null };
}

function taskRow(t: Task, filterByInstance: (id: string) => void): HTMLElement {
  const href = `#/tasks/${encodeURIComponent(t.id)}`;
  const wf = workflowOf(t);
  // The row opens the task; the instance link and its filter button must not also do so.
  const own = (e: Event) => e.stopPropagation();
  return h(
    "tr",
    { "data-task": t.id, "data-status": t.status, class: "clickable", onclick: () => (location.hash = href) },
    h("td", null, h("a", { href, class: "mono" }, t.id)),
    h("td", null, t.handler_name),
    h("td", null, t.queue_name),
    h("td", null, pill(t.status)),
    h("td", { class: "num" }, `${t.attempt} / ${t.max_attempts}`),
    h("td", { class: "mono small" }, t.worker_id ?? h("span", { class: "muted" }, "—")),
    h(
      "td",
      { class: "mono small", "data-instance": wf?.instance ?? null },
      wf
        ? [
            h("a", { href: `#/instances/${encodeURIComponent(wf.instance)}`, onclick: own, title: "Open the workflow instance" }, wf.instance),
            h(
              "button",
              {
                class: "linkish filter-by",
                type: "button",
                "data-filter-instance": wf.instance,
                title: "List only this instance's tasks",
                onclick: (e: Event) => {
                  own(e);
                  filterByInstance(wf.instance);
                },
              },
              "filter",
            ),
          ]
        : h("span", { class: "muted" }, "—"),
    ),
    h("td", { class: "mono small", "data-step": wf?.step ?? null }, wf?.step ?? h("span", { class: "muted" }, "—")),
    h("td", { title: stamp(t.created_at) }, ago(t.created_at)),
    h("td", { title: stamp(t.updated_at) }, ago(t.updated_at)),
  );
}

function debounce(fn: () => void, ms = 300): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}
