// The workflow instances list (GET /instances, P-WF-4): counts per state, filters by
// sequence and status (kept in the hash, #/instances?sequence=..&status=..), cursor paging,
// and a refresh every few seconds while a shown instance is still running.
import { api, ApiError, INSTANCE_STATUSES, type Instance, type InstanceStatus } from "./api";
import { fill, h, refill } from "./dom";
import { ago, stamp } from "./format";
import { empty, pill, problemBox } from "./widgets";

export interface InstanceFilters {
  sequence: string;
  status: InstanceStatus | "";
}

const PAGE_SIZE = 25;
// The counts come from the list itself (the contract has no count call): one page of at
// most COUNT_CAP ids per state, shown as "500+" beyond.
const COUNT_CAP = 500;

export function instanceFiltersFrom(hash: string): InstanceFilters {
  const q = new URLSearchParams(hash.split("?")[1] ?? "");
  const status = q.get("status") ?? "";
  return {
    sequence: q.get("sequence") ?? "",
    status: (INSTANCE_STATUSES as string[]).includes(status) ? (status as InstanceStatus) : "",
  };
}

export function instancesHash(f: InstanceFilters): string {
  const q = new URLSearchParams();
  if (f.sequence) q.set("sequence", f.sequence);
  if (f.status) q.set("status", f.status);
  const s = q.toString();
  return s ? `#/instances?${s}` : "#/instances";
}

export class InstanceList {
  private instances: Instance[] = [];
  private cursors: (string | undefined)[] = [undefined];
  private next: string | null = null;
  private loading = 0;
  private readonly counts = h("div", { class: "instance-counts", "data-testid": "instance-counts" });
  private readonly bar = h("div", { class: "filters" });
  private readonly list = h("div", null, empty("Loading…"));
  private readonly pager = h("div", { class: "pager" });

  constructor(
    public filters: InstanceFilters,
    private readonly onUnreachable: (err: ApiError | null) => void,
    private readonly operate: boolean,
  ) {}

  mount(root: HTMLElement): void {
    const seq = h("input", {
      id: "i-sequence",
      type: "search",
      placeholder: "any sequence",
      autocomplete: "off",
      spellcheck: "false",
      list: "dl-sequences",
      value: this.filters.sequence,
    });
    const names = h("datalist", { id: "dl-sequences" });
    // Listing sequences is an operator call (P-WF-1): other keys type the name.
    if (this.operate) {
      api.sequences().then(
        (p) => fill(names, p.sequences.map((q) => h("option", { value: q.name }))),
        () => undefined,
      );
    }
    seq.addEventListener("change", () => this.set({ sequence: seq.value.trim() }));
    const status = h(
      "select",
      { id: "i-status" },
      [["", "Any status"], ...INSTANCE_STATUSES.map((s) => [s, s])].map(([value, text]) => h("option", { value }, text)),
    );
    status.value = this.filters.status;
    status.addEventListener("change", () => this.set({ status: status.value as InstanceStatus | "" }));
    fill(
      this.bar,
      h("label", { class: "field" }, h("span", null, "Sequence"), seq, names),
      h("label", { class: "field" }, h("span", null, "Status"), status),
      h("button", { class: "btn", id: "i-clear", onclick: () => (location.hash = "#/instances") }, "Clear"),
    );
    fill(
      root,
      h("a", { href: "#/", class: "back" }, "← Overview"),
      h(
        "div",
        { class: "card", id: "instances-card" },
        h("div", { class: "card-head" }, h("h2", null, "Workflow instances"), h("span", { class: "muted" }, "newest first · click a state to filter")),
        this.counts,
        this.bar,
        this.list,
        this.pager,
      ),
    );
  }

  /** New filters go into the hash; the router builds the view again from it. */
  private set(change: Partial<InstanceFilters>): void {
    location.hash = instancesHash({ ...this.filters, ...change });
  }

  isLive(): boolean {
    return this.instances.some((i) => i.status === "running");
  }

  async load(): Promise<void> {
    const ticket = ++this.loading;
    const f = this.filters;
    try {
      const [page, counts] = await Promise.all([
        api.instances({
          limit: String(PAGE_SIZE),
          sequence: f.sequence || undefined,
          status: f.status || undefined,
          cursor: this.cursors[this.cursors.length - 1],
        }),
        Promise.all(
          INSTANCE_STATUSES.map((s) =>
            api.instances({ limit: String(COUNT_CAP), sequence: f.sequence || undefined, status: s }).then((p) => ({
              status: s,
              n: p.instances.length,
              more: p.next_cursor !== null,
            })),
          ),
        ),
      ]);
      if (ticket !== this.loading) return;
      this.instances = page.instances;
      this.next = page.next_cursor;
      this.onUnreachable(null);
      this.renderCounts(counts);
      this.render();
    } catch (err) {
      if (ticket !== this.loading) return;
      if (err instanceof ApiError && err.unreachable) {
        this.onUnreachable(err);
        return;
      }
      this.instances = [];
      fill(this.list, problemBox(err, "Could not list instances: "));
      fill(this.pager);
    }
  }

  private renderCounts(counts: { status: InstanceStatus; n: number; more: boolean }[]): void {
    refill(
      this.counts,
      counts.map((c) =>
        h(
          "button",
          {
            class: `count-tile${this.filters.status === c.status ? " active" : ""}`,
            "data-count": c.status,
            title: `List the ${c.status} instances`,
            onclick: () => this.set({ status: this.filters.status === c.status ? "" : c.status }),
          },
          pill(c.status),
          h("b", { "data-n": "" }, `${c.n}${c.more ? "+" : ""}`),
        ),
      ),
    );
  }

  private render(): void {
    if (this.instances.length === 0) {
      fill(this.list, empty("No instances match these filters."));
    } else {
      const head = ["Instance", "Sequence", "Status", "Steps", "Created", "Finished"].map((t) => h("th", null, t));
      refill(
        this.list,
        h("div", { class: "table-wrap" }, h("table", { class: "grid instances" }, h("thead", null, h("tr", null, head)), h("tbody", null, this.instances.map(instanceRow)))),
      );
    }
    const page = this.cursors.length;
    refill(
      this.pager,
      h("span", { class: "muted", "data-testid": "instance-page-info" }, `Page ${page} · ${this.instances.length} instance${this.instances.length === 1 ? "" : "s"}`),
      h("span", { class: "spacer" }),
      h("button", { class: "btn", id: "i-newer", disabled: page === 1, onclick: () => this.page(-1) }, "← Newer"),
      h("button", { class: "btn", id: "i-older", disabled: !this.next, onclick: () => this.page(1) }, "Older →"),
    );
  }

  private page(step: 1 | -1): void {
    if (step === 1 && this.next) this.cursors.push(this.next);
    if (step === -1 && this.cursors.length > 1) this.cursors.pop();
    void this.load();
  }
}

function instanceRow(i: Instance): HTMLElement {
  const href = `#/instances/${encodeURIComponent(i.id)}`;
  const done = i.steps.filter((s) => s.status === "completed").length;
  return h(
    "tr",
    { "data-instance": i.id, "data-status": i.status, class: "clickable", onclick: () => (location.hash = href) },
    h("td", null, h("a", { href, class: "mono" }, i.id)),
    h("td", null, `${i.sequence} `, h("span", { class: "muted small" }, `v${i.version}`)),
    h("td", null, pill(i.status)),
    h("td", { class: "num" }, `${done} / ${i.steps.length}`),
    h("td", { title: stamp(i.created_at) }, ago(i.created_at)),
    h("td", { title: stamp(i.finished_at) }, i.finished_at ? ago(i.finished_at) : h("span", { class: "muted" }, "—")),
  );
}
