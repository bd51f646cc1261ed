// Tiny DOM helpers: the dashboard builds its views with these instead of a framework,
// so the bundle stays small and has no runtime dependency.

type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

// The listeners h() gave each element, so that `refill` can move them to the node it keeps.
const LISTENERS = new WeakMap<Element, [string, EventListener][]>();

/** Create an element; `on*` attributes become listeners, `false`/`null` ones are left out. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") {
      const type = name.slice(2).toLowerCase();
      el.addEventListener(type, value);
      const own = LISTENERS.get(el);
      if (own) own.push([type, value]);
      else LISTENERS.set(el, [[type, value]]);
    } else if (name === "style") {
      // Through the CSSOM: the server's Content-Security-Policy forbids style attributes.
      el.style.cssText = String(value);
    } else if (name === "value" && "value" in el) {
      (el as HTMLInputElement).value = String(value);
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

/** Replace every child of `el`. */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/**
 * `fill` for what the refresh loop redraws: a child that did not change stays the same
 * node, so keyboard focus, a text selection and a held button survive the refresh (with
 * `fill` every row was a new node every 3 s). A changed element keeps its node too: its
 * attributes, listeners and text are brought in line with the new one, its children
 * likewise. Rows pair by their key attribute (data-task, data-instance, data-worker,
 * data-queue + data-handler), other children by position; form controls are always
 * replaced. Only for views that keep no reference to the nodes they pass in: those may be
 * left out of the page in favour of the node they match.
 */
export function refill(el: Element, ...children: Child[]): void {
  const next = document.createDocumentFragment();
  append(next, children);
  reconcile(el, Array.from(next.childNodes));
}

const KEYS = ["data-task", "data-instance", "data-worker", "data-queue", "data-handler"];
const CONTROLS = new Set(["INPUT", "SELECT", "TEXTAREA", "OPTION"]);

function keyOf(node: Node): string | null {
  if (!(node instanceof Element)) return null;
  const parts = KEYS.filter((k) => node.hasAttribute(k)).map((k) => `${k}=${node.getAttribute(k)}`);
  return parts.length ? parts.join(" ") : null;
}

function reconcile(parent: Node, next: Node[]): void {
  const old = Array.from(parent.childNodes);
  const byKey = new Map<string, Node>();
  for (const o of old) {
    const k = keyOf(o);
    if (k !== null && !byKey.has(k)) byKey.set(k, o);
  }
  const unkeyed = old.filter((o) => keyOf(o) === null);
  const used = new Set<Node>();
  let at = 0;
  const kept = next.map((n) => {
    const k = keyOf(n);
    const o = k !== null ? byKey.get(k) : unkeyed[at++];
    if (o === undefined || used.has(o) || !morph(o, n)) return n;
    used.add(o);
    return o;
  });
  for (const o of old) if (!used.has(o)) parent.removeChild(o);
  // Kept nodes stay where they are unless the order changed: moving a node blurs it.
  let ref = parent.firstChild;
  for (const node of kept) {
    if (node === ref) ref = ref.nextSibling;
    else parent.insertBefore(node, ref);
  }
}

/** Make `o` show what `n` shows; false when `o` cannot be kept (then `n` replaces it). */
function morph(o: Node, n: Node): boolean {
  if (o.nodeType !== n.nodeType || o.nodeName !== n.nodeName) return false;
  if (o.nodeType === Node.TEXT_NODE || o.nodeType === Node.COMMENT_NODE) {
    if (o.nodeValue !== n.nodeValue) o.nodeValue = n.nodeValue;
    return true;
  }
  if (!(o instanceof Element) || !(n instanceof Element)) return false;
  if (CONTROLS.has(o.nodeName) || o.namespaceURI !== n.namespaceURI || keyOf(o) !== keyOf(n)) return false;
  for (const a of Array.from(o.attributes)) if (!n.hasAttribute(a.name)) o.removeAttribute(a.name);
  for (const a of Array.from(n.attributes)) {
    if (o.getAttribute(a.name) === a.value) continue;
    // Through the CSSOM, as h() does: the Content-Security-Policy forbids style attributes.
    if (a.name === "style" && o instanceof HTMLElement && n instanceof HTMLElement) o.style.cssText = n.style.cssText;
    else o.setAttribute(a.name, a.value);
  }
  for (const [type, fn] of LISTENERS.get(o) ?? []) o.removeEventListener(type, fn);
  const fresh = LISTENERS.get(n);
  for (const [type, fn] of fresh ?? []) o.addEventListener(type, fn);
  if (fresh) LISTENERS.set(o, fresh);
  else LISTENERS.delete(o);
  reconcile(o, Array.from(n.childNodes));
  return true;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el as T;
}
