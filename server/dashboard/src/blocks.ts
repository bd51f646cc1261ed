// The instance page's model of block runs (P-WF-10, P-WF-11): `Instance.steps` is a flat list
// in start order; each run names its container (`group`, a key) and the list of that
// container it is in (`lane`). This turns it into a tree in one pass, so a for_each of 1,000
// items (thousands of runs) is grouped in linear time, and summarises loop iterations.
import type { StepRun } from "./api";

/**
 * A run as the page reads it. The block fields are optional here: an instance of a 1.x
 * sequence may come without them (no `type`, no `lane`), and must still render.
 */
export type BlockRun = StepRun & {
  key?: string;
  type?: string;
  group?: string | null;
  lane?: string | null;
  chosen?: string | null;
  iterations?: number | null;
  child_instance_id?: string | null;
};

export interface BlockNode {
  run: BlockRun;
  key: string;
  type: string;
  /** The runs inside this block, per lane, lanes in the order they first started. */
  lanes: Map<string, BlockNode[]>;
}

export const keyOf = (r: BlockRun): string => r.key ?? r.id;

/** Top-level blocks in start order, each holding its nested runs by lane. */
export function blockTree(steps: BlockRun[]): BlockNode[] {
  const byKey = new Map<string, BlockNode>();
  for (const run of steps) byKey.set(keyOf(run), { run, key: keyOf(run), type: run.type ?? "step", lanes: new Map() });
  const top: BlockNode[] = [];
  for (const node of byKey.values()) {
    const parent = node.run.group ? byKey.get(node.run.group) : undefined;
    if (!parent) {
      top.push(node);
      continue;
    }
    // 1.x: a parallel group is untyped and each child is its own branch.
    if (!node.run.type) parent.type = "parallel";
    const lane = node.run.lane ?? `branch:${parent.lanes.size}`;
    const list = parent.lanes.get(lane);
    if (list) list.push(node);
    else parent.lanes.set(lane, [node]);
  }
  return top;
}

/** `iteration:12` -> 12; anything else -> null. */
export function iterationOf(lane: string): number | null {
  const m = /^iteration:(\d+)$/.exec(lane);
  return m ? Number(m[1]) : null;
}

/** How one iteration went: the most telling status of its runs. */
export function laneStatus(nodes: BlockNode[]): string {
  const seen = new Set(nodes.map((n) => n.run.status));
  for (const s of ["failed", "running", "pending", "cancelled"]) if (seen.has(s as StepRun["status"])) return s;
  return "completed";
}

export interface IterationSummary {
  /** Iterations started (the block's `iterations`, else the lanes seen). */
  started: number;
  /** Iterations per status, in the order failed, running, pending, cancelled, completed. */
  counts: [string, number][];
  /** Iteration numbers per status, ascending. */
  byStatus: Map<string, number[]>;
}

export function summariseIterations(node: BlockNode): IterationSummary {
  const byStatus = new Map<string, number[]>();
  for (const [lane, nodes] of node.lanes) {
    const i = iterationOf(lane);
    if (i === null) continue;
    const status = laneStatus(nodes);
    const list = byStatus.get(status);
    if (list) list.push(i);
    else byStatus.set(status, [i]);
  }
  for (const list of byStatus.values()) list.sort((a, b) => a - b);
  const order = ["failed", "running", "pending", "cancelled", "completed"];
  const counts = order.filter((s) => byStatus.has(s)).map((s): [string, number] => [s, byStatus.get(s)!.length]);
  return { started: node.run.iterations ?? node.lanes.size, counts, byStatus };
}

/** A block of a sequence definition, as far as the page reads it (GET /sequences/{name}). */
export interface BlockDef {
  id?: string;
  type?: string;
  routes?: { condition: string; blocks?: BlockDef[] }[];
  default?: BlockDef[];
  try_block?: BlockDef[];
  catch_block?: BlockDef[];
  finally_block?: BlockDef[];
  branches?: BlockDef[][];
  parallel?: BlockDef[];
  body?: BlockDef[];
  condition?: string;
  collection?: string;
  sequence_name?: string;
}

/** Every block of a definition by id (ids are unique in the whole sequence). */
export function definitionIndex(blocks: BlockDef[]): Map<string, BlockDef> {
  const index = new Map<string, BlockDef>();
  const walk = (list: BlockDef[] | undefined): void => {
    for (const b of list ?? []) {
      if (b.id) index.set(b.id, b);
      for (const r of b.routes ?? []) walk(r.blocks);
      for (const branch of b.branches ?? []) walk(branch);
      for (const l of [b.default, b.try_block, b.catch_block, b.finally_block, b.parallel, b.body]) walk(l);
    }
  };
  walk(blocks);
  return index;
}
