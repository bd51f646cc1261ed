// Entry point: who the key is and which tenant is shown (header), routing (#/ overview,
// #/tasks/<id> detail, #/queues/<name> queue view,
// #/instances and #/instances/<id> workflows), the refresh loop and the banner
// (server unreachable, or a call refused with 403). Everything shown comes from the public
// API (openapi.yaml).
import { api, ApiError, apiKey, forgetKey, onForbidden, onKeyChange, onUnauthorized, type QueueStats, type Worker } from "./api";
import { promptForKey } from "./auth";
import { Banner } from "./banner";
import { TaskDetail } from "./detail";
import { InstanceDetail } from "./instance";
import { InstanceList, instanceFiltersFrom } from "./instances";
import { byId, fill, h } from "./dom";
import { stamp } from "./format";
import { canCancelInstances, canOperate, current, refreshPrincipal, renderPrincipal } from "./principal";
import { QueueView } from "./queue-view";
import { renderQueues, withControlRows } from "./queues";
import { NO_FILTERS, RANGES, TaskList, type Filters } from "./tasks";
import { currentTenant, renderTenantPicker, settleTenant } from "./tenant";
import { problemBox } from "./widgets";
import { renderWorkers } from "./workers";

/**
 * How often the page re-reads what it shows: 3 s, or `?refresh=<seconds>` in the page's
 * address (0.5 to 300; anything else keeps 3 s). The browser tests use 0.5 s.
 */
function refreshMsOf(search: string): number {
  const raw = new URLSearchParams(search).get("refresh");
  const seconds = raw === null || raw.trim() === "" ? NaN : Number(raw);
  return Number.isFinite(seconds) && seconds >= 0.5 && seconds <= 300 ? Math.round(seconds * 1000) : 3000;
}
const REFRESH_MS = refreshMsOf(location.search);
byId("conn").title = `refreshes every ${REFRESH_MS / 1000} s`;

let lastOk: string | null = null;
let unreachableSince: ApiError | null = null;
const banner = new Banner(byId("banner"), REFRESH_MS);
let started = false; // the first /whoami answered (or failed) and the views are routed

/** Any view reports here whether the server answered; the banner and header follow. */
function reachability(err: ApiError | null): void {
  if (err === null) {
    lastOk = new Date().toISOString();
    unreachableSince = null;
  } else {
    unreachableSince = err;
  }
  banner.reachability(unreachableSince, lastOk);
  byId("forget-key").hidden = apiKey() === null;
  const conn = byId("conn");
  conn.dataset.state = unreachableSince ? "down" : "up";
  fill(conn, h("span", { class: "dot" }), unreachableSince ? "disconnected" : `live · ${lastOk ? stamp(lastOk).slice(11) : ""}`);
}

// A 403 may mean the keys file changed under the page (SIGHUP, P-AUTH-4): ask /whoami again,
// at most every RECHECK_MS, and redraw when the key's role or tenants differ.
const RECHECK_MS = 10_000;
let recheckedAt = 0;
async function recheckPrincipal(): Promise<void> {
  if (!started || Date.now() - recheckedAt < RECHECK_MS) return;
  recheckedAt = Date.now();
  const before = JSON.stringify(current());
  await loadPrincipal(false);
  if (JSON.stringify(current()) !== before) route();
}

/** Key id, role and tenant in the header, and the tenant selector when the key may choose. */
function renderHeader(): void {
  renderPrincipal(byId("principal"), currentTenant());
  void renderTenantPicker(byId("tenant-picker"), current(), tenantChanged);
}

/** Another tenant: its own task ids, so a task detail gives way to the overview. */
function tenantChanged(): void {
  banner.clear();
  renderPrincipal(byId("principal"), currentTenant());
  if (/^#\/tasks\//.test(location.hash)) location.hash = "#/";
  else if (/^#\/instances\//.test(location.hash)) location.hash = "#/instances";
  else route();
}

/** P-AUTH-5: ask who the key is, settle the tenant, and redraw what depends on the role. */
async function loadPrincipal(clear = true): Promise<boolean> {
  if (clear) banner.clear();
  const p = await refreshPrincipal();
  const settled = settleTenant(p);
  if (settled.refused !== null && p) {
    banner.refused(`key ${p.key_id ?? "?"} (role ${p.role}) may not act in tenant ${settled.refused}: showing tenant ${p.tenant}`);
  }
  renderHeader();
  return p !== null;
}

const list = new TaskList(
  (f) => history.replaceState(null, "", overviewHash(f)),
  reachability,
);
let detail: TaskDetail | null = null;
let queueView: QueueView | null = null;
let instanceList: InstanceList | null = null;
let instanceView: InstanceDetail | null = null;

function overviewHash(f: Filters): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v !== NO_FILTERS[k as keyof Filters]) q.set(k, v);
  const s = q.toString();
  return s ? `#/?${s}` : "#/";
}

function filtersFrom(hash: string): Filters {
  const q = new URLSearchParams(hash.split("?")[1] ?? "");
  const f: Filters = { ...NO_FILTERS };
  for (const key of Object.keys(f) as (keyof Filters)[]) {
    const v = q.get(key);
    if (v !== null) (f as unknown as Record<string, string>)[key] = v;
  }
  if (!(f.range in RANGES)) f.range = NO_FILTERS.range;
  return f;
}

async function loadOverview(withTasks: boolean): Promise<void> {
  const [queues, workers] = await Promise.all([
    api.queues().catch(report(byId("queues"), "queues")),
    api.workers().then((r) => r.workers).catch(report(byId("workers"), "workers")),
    withTasks ? list.load() : null,
  ]);
  await released();
  if (queueView || detail || instanceList || instanceView) return; // the click left the overview
  if (queues) {
    renderQueues(byId("queues"), queues, (pick) => {
      // The bar counts every task of the queue, not the last hour's: list them all.
      list.set({ queue: pick.queue, handler: pick.handler, status: pick.status ?? "", range: "all", id: "" });
      showTasks();
    });
  }
  if (workers) {
    renderWorkers(byId("workers"), workers, {
      operate: canOperate(),
      refresh: () => void loadOverview(false),
      error: (box) => fill(byId("worker-error"), box),
      pickWorker: (id) => {
        list.set({ worker: id, id: "" });
        showTasks();
      },
    });
  }
  suggest(queues ? withControlRows(queues) : [], workers ?? []);
  byId("queue-updated").textContent = queues ? `updated ${stamp(new Date().toISOString()).slice(11)}` : "";
}

/** Bring the task list into view after a click elsewhere filtered it. */
function showTasks(): void {
  byId("tasks-card").scrollIntoView({ behavior: "smooth", block: "start" });
}

function suggest(queues: QueueStats[], workers: Worker[]): void {
  list.suggest(
    [...queues.map((q) => q.handler_name).filter(Boolean), ...workers.flatMap((w) => w.handlers)],
    [...queues.map((q) => q.queue_name), ...workers.flatMap((w) => w.queues)],
    workers.map((w) => w.worker_id),
  );
}

/** A panel's load failed: unreachable goes to the banner (keeping stale data), anything else into the panel. */
function report(el: HTMLElement, what: string) {
  return (err: unknown): null => {
    if (err instanceof ApiError && err.unreachable) reachability(err);
    else {
      if (err instanceof ApiError) reachability(null); // it answered, if only to refuse (403)
      fill(el, problemBox(err, `Could not load ${what}: `));
    }
    return null;
  };
}

function route(): void {
  const m = /^#\/tasks\/([^?]+)/.exec(location.hash);
  const q = /^#\/queues\/([^?]+)/.exec(location.hash);
  const overview = byId("overview");
  const detailRoot = byId("detail");
  const il = /^#\/instances(?:\?|$)/.exec(location.hash);
  const iv = /^#\/instances\/([^?]+)/.exec(location.hash);
  detail = null;
  queueView = null;
  instanceList = null;
  instanceView = null;
  byId("nav-instances").classList.toggle("active", !!(il || iv));
  if (il) {
    overview.hidden = true;
    detailRoot.hidden = false;
    instanceList = new InstanceList(instanceFiltersFrom(location.hash), reachability, canOperate());
    instanceList.mount(detailRoot);
    document.title = "Instances · Orch8";
    void instanceList.load();
  } else if (iv) {
    overview.hidden = true;
    detailRoot.hidden = false;
    // P-AUTH-2 role table: cancelInstance producer+operator(+admin), retryInstance operator(+admin).
    instanceView = new InstanceDetail(decodeURIComponent(iv[1]), reachability, { cancel: canCancelInstances(), retry: canOperate(), readSequences: canOperate() });
    instanceView.mount(detailRoot);
    document.title = `${instanceView.id} · Orch8`;
    void instanceView.load();
  } else if (q) {
    overview.hidden = true;
    detailRoot.hidden = false;
    queueView = new QueueView(decodeURIComponent(q[1]), reachability, canOperate());
    queueView.mount(detailRoot);
    document.title = `${queueView.queue} · queue · Orch8`;
    void queueView.load();
  } else if (m) {
    overview.hidden = true;
    detailRoot.hidden = false;
    detail = new TaskDetail(decodeURIComponent(m[1]), reachability, canOperate());
    detail.mount(detailRoot);
    document.title = `${detail.id} · Orch8`;
    void detail.load();
  } else {
    fill(detailRoot);
    detailRoot.hidden = true;
    overview.hidden = false;
    document.title = "Orch8 dashboard";
    list.filters = filtersFrom(location.hash);
    list.set({});
    void loadOverview(false);
  }
}

let busy = false;
// A click is a press and a release on the same element. A refresh that rebuilds the view
// between them sends the click to a common ancestor instead (a queue row opens the task
// list where its link was pressed), so no refresh starts while a button is held.
// A refresh already under way when the button went down draws once it is released.
let pressed = false;
let onRelease: (() => void)[] = [];
window.addEventListener("pointerdown", () => { pressed = true; }, true);
for (const end of ["pointerup", "pointercancel"]) {
  window.addEventListener(end, () => {
    pressed = false;
    const waiting = onRelease;
    onRelease = [];
    // After the click this release makes, which may change the view.
    setTimeout(() => { for (const resume of waiting) resume(); });
  }, true);
}
function released(): Promise<void> {
  return pressed ? new Promise((resume) => onRelease.push(resume)) : Promise.resolve();
}

async function tick(): Promise<void> {
  // Nobody looks at a hidden tab: do not poll the server for it.
  if (busy || pressed || document.hidden || !byId("auth").hidden) return;
  busy = true;
  try {
    // Not known yet (the server was unreachable at load): the role decides the buttons.
    if (!current() && (await loadPrincipal())) {
      route();
      return;
    }
    if (instanceList) {
      if (instanceList.isLive() || unreachableSince) await instanceList.load();
    } else if (instanceView) {
      if (instanceView.isLive() || unreachableSince) await instanceView.load();
    } else if (queueView) {
      await queueView.load();
    } else if (detail) {
      if (detail.isLive() || unreachableSince) await detail.load();
    } else {
      await loadOverview(list.isLive() || unreachableSince !== null);
    }
  } finally {
    busy = false;
  }
}

async function showInfo(): Promise<void> {
  try {
    const info = await api.info();
    fill(byId("server-info"), `${info.name} ${info.version} · contract ${info.spec_version} · ${info.storage}`);
  } catch {
    // The header is cosmetic; the panels report errors.
  }
}

onUnauthorized(promptForKey);
onForbidden((err) => {
  // P-AUTH-3: a 403 from any view shows in the banner.
  banner.refused(err.problem?.detail || err.message);
  void recheckPrincipal();
});
// A key typed into the prompt mid-session may have another role or tenant.
onKeyChange(() => {
  if (started) void loadPrincipal().then(() => route());
});
byId("forget-key").addEventListener("click", () => {
  forgetKey();
  location.reload();
});
list.mount();
window.addEventListener("hashchange", route);
void showInfo();
void loadPrincipal().then(() => {
  started = true;
  route();
  setInterval(() => void tick(), REFRESH_MS);
});
