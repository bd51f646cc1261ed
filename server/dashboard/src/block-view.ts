// The instance page's timeline: one item per block run (P-WF-10), nested under its container
// by lane: parallel and race branches side by side (the race's winner and its cancelled
// losers), a router's route taken and the ones it skipped, try / catch / finally lanes (the
// catch lane highlighted when it ran), loop and for_each iterations (collapsed to counts and
// the first failing ones when many; a count draws that status's iterations), a
// sub_sequence's child instance, the on_error step last.
import { type BlockDef, type BlockNode, type BlockRun, blockTree, iterationOf, keyOf, laneStatus, summariseIterations } from "./blocks";
import { h } from "./dom";
import { ago, duration, stamp } from "./format";
import { pill } from "./widgets";

/** Iterations are all drawn up to this many; beyond, counts and the failing ones first. */
export const ITERATIONS_DRAWN = 10;
const FAILING_DRAWN = 5;
const ITERATION_PAGE = 50;

export interface TimelineState {
  /** The sequence's blocks by id, when the key may read the definition (operator, admin). */
  defs: Map<string, BlockDef> | null;
  /** Per loop key, how many iterations the operator asked to see beyond the failing ones. */
  shown: Map<string, number>;
  /** Per loop key, the iteration status the operator picked from the counts, if any. */
  only: Map<string, string>;
  /** Draw the timeline again (after a show-more click), without asking the server. */
  redraw: () => void;
}

const TYPE_LABEL: Record<string, string> = {
  parallel: "parallel",
  race: "race",
  router: "router",
  try_catch: "try / catch",
  loop: "loop",
  for_each: "for each",
  sub_sequence: "sub-sequence",
};

export function stepTimeline(steps: BlockRun[], onError: BlockRun | null | undefined, state: TimelineState): HTMLElement {
  const top = blockTree(steps);
  return h(
    "section",
    { class: "timeline steps", "data-testid": "steps" },
    h("h3", null, `Steps (${top.length})`),
    h("ol", null, top.map((n) => blockItem(n, state)), onError ? runItem(onError, "on_error", null) : null),
  );
}

function blockItem(node: BlockNode, state: TimelineState): HTMLElement {
  const body = (() => {
    switch (node.type) {
      case "step":
        return null;
      case "parallel":
      case "race":
        return branches(node, state);
      case "router":
        return routes(node, state);
      case "try_catch":
        return tryCatch(node, state);
      case "loop":
      case "for_each":
        return iterations(node, state);
      case "sub_sequence":
        return childInstance(node.run);
      default:
        return node.lanes.size ? lanes(node, [...node.lanes.keys()], "stack", state, (l) => ({ label: l })) : null;
    }
  })();
  return runItem(node.run, node.type === "step" ? "step" : "group", body, node.type);
}

interface LaneLook {
  label: string;
  state?: string;
  chip?: HTMLElement | null;
  note?: HTMLElement | string | null;
}

/** The lanes of a container: each a labelled list of block items, side by side or stacked. */
function lanes(node: BlockNode, names: string[], layout: "side" | "stack", state: TimelineState, look: (lane: string) => LaneLook): HTMLElement {
  return h(
    "div",
    { class: `lanes lanes-${layout}`, "data-group": node.key },
    names.map((lane) => {
      const l = look(lane);
      const all = node.lanes.get(lane) ?? [];
      // A route skipped or a catch not needed: the server may list its blocks, pending, but
      // they will never run; name them rather than draw them as waiting.
      const never = l.state === "skipped" || l.state === "idle" ? all.filter((n) => n.run.status === "pending") : [];
      const nodes = never.length ? all.filter((n) => !never.includes(n)) : all;
      return h(
        "div",
        { class: `lane${l.state ? ` lane-${l.state}` : ""}`, "data-lane": lane, "data-lane-state": l.state ?? null },
        h("div", { class: "lane-head small" }, h("span", { class: "lane-label" }, l.label), l.chip ?? null),
        l.note ? h("div", { class: "lane-note small muted" }, l.note) : null,
        never.length ? h("div", { class: "lane-note small muted", "data-testid": "not-run" }, "not run: ", h("span", { class: "mono" }, never.map((n) => n.run.id).join(", "))) : null,
        nodes.length ? h("ol", null, nodes.map((n) => blockItem(n, state))) : null,
      );
    }),
  );
}

// `branch:2`, `route:0`, `iteration:7` by number; a lane without one (`default`) last.
const laneIndex = (lane: string) => Number(lane.split(":")[1] ?? Infinity);
const byIndex = (a: string, b: string) => laneIndex(a) - laneIndex(b) || a.localeCompare(b);
const chip = (text: string, cls: string, testId: string, title: string | null = null) =>
  h("span", { class: `chip ${cls}`, "data-testid": testId, title }, text);

function branches(node: BlockNode, state: TimelineState): HTMLElement {
  const names = [...node.lanes.keys()].sort(byIndex);
  const winner = node.type === "race" ? (node.run.chosen ?? null) : null;
  return lanes(node, names, "side", state, (lane) => {
    const label = lane.replace(":", " ");
    if (!winner) return { label };
    return lane === winner
      ? { label, state: "won", chip: chip("winner", "chip-ok", "winner") }
      : { label, state: "lost", chip: chip("lost · cancelled", "chip-muted", "lost", "Another branch completed first: this one was cancelled") };
  });
}

function routes(node: BlockNode, state: TimelineState): HTMLElement {
  const def = state.defs?.get(node.run.id);
  const chosen = node.run.chosen ?? null;
  const decided = chosen !== null || node.run.status === "completed";
  // The definition lists every route; without it (a producer key) only what ran is known.
  const names = def
    ? [...(def.routes ?? []).map((_, i) => `route:${i}`), ...(def.default?.length || chosen === "default" ? ["default"] : [])]
    : [...new Set([...(chosen ? [chosen] : []), ...node.lanes.keys()])].sort(byIndex);
  const view = lanes(node, names, "stack", state, (lane) => {
    const i = lane.startsWith("route:") ? Number(lane.slice(6)) : null;
    const condition = i !== null ? def?.routes?.[i]?.condition : null;
    const label = lane === "default" ? "default" : `route ${i}`;
    const note = condition ? h("code", { "data-testid": "condition" }, condition) : null;
    if (lane === chosen) return { label, note, state: "taken", chip: chip("taken", "chip-ok", "route-taken") };
    return decided ? { label, note, state: "skipped", chip: chip("skipped", "chip-muted", "route-skipped") } : { label, note };
  });
  const summary =
    chosen === null && decided
      ? "No route matched and there is no default: the router's output is null."
      : !def && chosen !== null
        ? "Routes other than the one taken were skipped (their conditions are in the definition, which needs an operator key)."
        : null;
  return h("div", null, summary ? h("div", { class: "small muted", "data-testid": "router-note" }, summary) : null, view);
}

function tryCatch(node: BlockNode, state: TimelineState): HTMLElement {
  const def = state.defs?.get(node.run.id);
  // The server may list a lane's blocks before they run (pending): a lane counts as run
  // once one of its blocks started.
  const ran = (lane: string) => (node.lanes.get(lane) ?? []).some((n) => n.run.status !== "pending");
  const defined = (lane: string) =>
    lane === "try" || node.lanes.has(lane) || (lane === "catch" ? !!def?.catch_block : !!def?.finally_block);
  return lanes(node, ["try", "catch", "finally"].filter(defined), "stack", state, (lane) => {
    if (lane === "try" || ran(lane)) {
      return lane === "catch" ? { label: "catch", state: "caught", chip: chip("caught", "chip-warn", "caught", "A block of try failed: the catch blocks ran") } : { label: lane };
    }
    const st = node.run.status;
    const why =
      lane === "finally" ? "not run yet" : st === "completed" ? "not run: try did not fail" : st === "running" || st === "pending" ? "not run (try has not failed)" : "not run";
    return { label: lane, state: "idle", note: why };
  });
}

function iterations(node: BlockNode, state: TimelineState): HTMLElement {
  const sum = summariseIterations(node);
  const all = [...node.lanes.keys()].filter((l) => iterationOf(l) !== null).sort(byIndex);
  const few = all.length <= ITERATIONS_DRAWN;
  const only = few ? null : (state.only.get(node.key) ?? null);
  const set = (status: string | null, shown: number) => () => {
    if (status) state.only.set(node.key, status);
    else state.only.delete(node.key);
    state.shown.set(node.key, shown);
    state.redraw();
  };
  const counts = h(
    "div",
    { class: "iteration-counts small", "data-testid": "iteration-counts" },
    h("span", { "data-iterations": sum.started }, `${sum.started} iteration${sum.started === 1 ? "" : "s"} started`),
    sum.counts.map(([s, n]) =>
      few
        ? h("span", { class: `iter-count pill pill-${s}`, "data-iter-count": s }, `${n} ${s}`)
        : h(
            "button",
            {
              class: `iter-count pill pill-${s}${only === s ? " picked" : ""}`,
              "data-iter-count": s,
              "aria-pressed": only === s ? "true" : "false",
              title: only === s ? "Back to the failing iterations first" : `Draw the ${s} iterations`,
              onclick: only === s ? set(null, 0) : set(s, ITERATION_PAGE),
            },
            `${n} ${s}`,
          ),
    ),
  );
  if (few) return h("div", null, counts, lanes(node, all, "stack", state, iterationLook(node)));

  // Collapsed: the first failing iterations, then as many more (of the status picked, else
  // of all, in order) as the operator asked for.
  const pool = only ? (sum.byStatus.get(only) ?? []).map((i) => `iteration:${i}`) : all;
  const failing = only ? [] : (sum.byStatus.get("failed") ?? []).slice(0, FAILING_DRAWN);
  const shown = Math.min(state.shown.get(node.key) ?? 0, pool.length);
  const drawn = new Set([...failing.map((i) => `iteration:${i}`), ...pool.slice(0, shown)]);
  const hidden = all.length - drawn.size;
  return h(
    "div",
    null,
    counts,
    failing.length ? h("div", { class: "small muted", "data-testid": "failing-first" }, `First failing iteration${failing.length === 1 ? "" : "s"}: ${failing.map((i) => `#${i}`).join(", ")}`) : null,
    lanes(node, all.filter((l) => drawn.has(l)), "stack", state, iterationLook(node)),
    h(
      "div",
      { class: "iteration-more small" },
      hidden ? h("span", { class: "muted", "data-testid": "iterations-hidden" }, `${hidden} more iteration${hidden === 1 ? "" : "s"} not drawn`) : null,
      shown < pool.length
        ? h("button", { class: "btn small", "data-show-iterations": node.key, onclick: set(only, shown + ITERATION_PAGE) }, `Show ${Math.min(ITERATION_PAGE, pool.length - shown)} more${only ? ` ${only}` : ""} in order`)
        : null,
      shown > 0 || only ? h("button", { class: "btn small", "data-collapse-iterations": node.key, onclick: set(null, 0) }, "Collapse") : null,
    ),
  );
}

const iterationLook = (node: BlockNode) => (lane: string): LaneLook => {
  const status = laneStatus(node.lanes.get(lane) ?? []);
  return { label: `#${iterationOf(lane)}`, state: `iter-${status}`, chip: pill(status) };
};

function childInstance(run: BlockRun): HTMLElement | null {
  const child = run.child_instance_id;
  if (!child) return h("div", { class: "small muted" }, "child instance not started yet");
  return h(
    "div",
    { class: "small", "data-testid": "child-instance" },
    "child instance ",
    h("a", { href: `#/instances/${encodeURIComponent(child)}`, class: "mono" }, child),
  );
}

/** One run: its status, what it is, its task and attempts (steps), timing, error and output. */
function runItem(s: BlockRun, kind: "step" | "group" | "on_error", nested: HTMLElement | null, type = "step"): HTMLElement {
  const href = s.task_id ? `#/tasks/${encodeURIComponent(s.task_id)}` : null;
  const ran = s.started_at && s.finished_at ? Date.parse(s.finished_at) - Date.parse(s.started_at) : null;
  const key = kind === "on_error" ? "on_error" : keyOf(s);
  return h(
    "li",
    {
      class: `attempt step step-${kind} block-${type} outcome-${s.status}`,
      "data-step": key,
      "data-block-type": kind === "on_error" ? null : type,
      "data-step-status": s.status,
    },
    h("span", { class: "node" }),
    h(
      "div",
      { class: "attempt-head" },
      h("b", { class: "mono", title: key === s.id ? null : key }, kind === "on_error" ? "on_error" : s.id),
      pill(s.status),
      TYPE_LABEL[type] ? h("span", { class: "chip", "data-testid": type }, TYPE_LABEL[type]) : null,
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
