// P-SDK-15: an output goes to the server only when it is strict JSON (RFC 8259). What
// JSON.stringify would silently change (NaN and Infinity to null, a Map to {}) or reject
// (a cycle, a BigInt) fails the task permanently with code `invalid_output` instead.

/** Why an output is not strict JSON; `type` names the offending kind of value. */
export class InvalidOutputError extends Error {
  constructor(readonly type: string, message: string) {
    super(message);
    this.name = "InvalidOutputError";
  }
}

// Containers JSON.stringify turns into {} (or worse) without a word.
const OPAQUE: Array<[new (...a: never[]) => object, string]> = [
  [Map, "Map"], [Set, "Set"], [WeakMap, "WeakMap"], [WeakSet, "WeakSet"], [RegExp, "RegExp"],
  [Promise, "Promise"], [ArrayBuffer, "ArrayBuffer"],
];

function walk(value: unknown, path: string, ancestors: Set<object>): void {
  switch (typeof value) {
    case "string":
    case "boolean":
    case "undefined": // omitted from objects, as JSON.stringify does (optional fields)
      return;
    case "number":
      if (!Number.isFinite(value)) throw new InvalidOutputError(String(value), `${path} is ${value}, which JSON cannot represent`);
      return;
    case "bigint":
    case "symbol":
    case "function":
      throw new InvalidOutputError(typeof value, `${path} is a ${typeof value}, which JSON cannot represent`);
  }
  if (value === null) return;
  const obj = value as Record<string, unknown> & { toJSON?: () => unknown };
  if (typeof obj.toJSON === "function") {
    walk(obj.toJSON(), path, ancestors); // Date and friends encode as their toJSON()
    return;
  }
  if (ancestors.has(obj)) throw new InvalidOutputError("cycle", `${path} refers back to itself (a cycle)`);
  for (const [cls, name] of OPAQUE) {
    if (obj instanceof cls) throw new InvalidOutputError(name, `${path} is a ${name}, which JSON cannot represent`);
  }
  if (ArrayBuffer.isView(obj)) throw new InvalidOutputError(obj.constructor.name, `${path} is a ${obj.constructor.name}, which JSON cannot represent`);
  ancestors.add(obj);
  if (Array.isArray(obj)) obj.forEach((item, i) => walk(item, `${path}[${i}]`, ancestors));
  else for (const key of Object.keys(obj)) walk(obj[key], `${path}.${key}`, ancestors);
  ancestors.delete(obj);
}

/** Throws InvalidOutputError unless `output` encodes as strict JSON. */
export function checkOutput(output: unknown): void {
  walk(output, "output", new Set());
}
