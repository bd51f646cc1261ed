// The tenant the dashboard looks at (P-TEN-2): every call carries it as X-Tenant-Id. The
// choice lives in the page URL (`/ui/?tenant=team-a#/...`, so a link opens the same tenant)
// and in localStorage (the next visit starts there); the header's selector changes it.
import { api, useTenant, type Principal } from "./api";
import { fill, h } from "./dom";

const STORAGE = "orch8.tenant";
const PARAM = "tenant";
const TENANT_ID = /^[A-Za-z0-9_.-]{1,64}$/; // P-TEN-2

let chosen: string | null = null;

/** The tenant the views show, or null before the first choice (no header is sent then). */
export function currentTenant(): string | null {
  return chosen;
}

/** P-TEN-2: the key's own tenant, one of its `tenants`, or any when `tenants` is null. */
export function mayAct(p: Principal, tenant: string): boolean {
  return p.tenants === null || tenant === p.tenant || p.tenants.includes(tenant);
}

/** A principal with a choice: `tenants` null (any) or a non-empty list. */
export function maySelect(p: Principal): boolean {
  return p.tenants === null || p.tenants.length > 0;
}

/**
 * Settle the tenant for this page: the URL's, else the stored one, else the key's own.
 * A wanted tenant the key may not act in gives way to the key's own; the refusal is returned
 * so the page can say why it shows another tenant.
 */
export function settleTenant(p: Principal | null): { tenant: string | null; refused: string | null } {
  const fromUrl = new URLSearchParams(location.search).get(PARAM);
  const wanted = [fromUrl, localStorage.getItem(STORAGE)].find((t): t is string => !!t && TENANT_ID.test(t)) ?? null;
  let tenant = wanted ?? p?.tenant ?? null;
  let refused: string | null = null;
  if (p && tenant !== null && !mayAct(p, tenant)) {
    refused = tenant;
    tenant = p.tenant;
  }
  if (tenant !== null) chooseTenant(tenant, refused === null && wanted !== null);
  return { tenant, refused };
}

/** Act in `tenant` from now on; `remember` also stores it for the next visit. */
export function chooseTenant(tenant: string, remember = true): void {
  chosen = tenant;
  useTenant(tenant);
  if (remember) localStorage.setItem(STORAGE, tenant);
  const url = new URL(location.href);
  if (url.searchParams.get(PARAM) !== tenant) {
    url.searchParams.set(PARAM, tenant);
    history.replaceState(null, "", url);
  }
}

/**
 * The header's selector, for a principal that may choose. Admins (and a server without keys)
 * get the tenants in use from GET /tenants with their counts, plus a free-text entry;
 * others their own tenant and their `tenants`.
 */
export async function renderTenantPicker(el: HTMLElement, p: Principal | null, onChange: () => void): Promise<void> {
  if (!p || !maySelect(p)) {
    fill(el);
    return;
  }
  const counts = new Map<string, string>();
  if (p.role === "admin") {
    try {
      for (const t of (await api.tenants()).tenants) counts.set(t.tenant, `${t.tasks} task${t.tasks === 1 ? "" : "s"} · ${t.workers} worker${t.workers === 1 ? "" : "s"}`);
    } catch {
      // The list is a convenience: the free-text entry still reaches any tenant.
    }
  }
  const names = [...new Set([p.tenant, ...(p.tenants ?? []), ...counts.keys(), chosen ?? p.tenant])].sort();
  const pick = (name: string) => {
    if (name === chosen) return;
    chooseTenant(name);
    void renderTenantPicker(el, p, onChange);
    onChange();
  };
  const select = h(
    "select",
    { id: "tenant-select", "aria-label": "tenant", title: "The tenant every view shows (X-Tenant-Id)", onchange: () => pick(select.value) },
    names.map((n) => h("option", { value: n, selected: n === chosen }, counts.has(n) ? `${n} · ${counts.get(n)}` : n)),
  );
  select.value = chosen ?? p.tenant;
  fill(el, h("span", { class: "tenant-label" }, "tenant"), select, p.tenants === null ? freeText(pick) : null);
}

/** Another tenant by name (tenants without tasks or workers yet are not listed). */
function freeText(pick: (name: string) => void): HTMLElement {
  const input = h("input", { id: "tenant-input", type: "text", placeholder: "other tenant", "aria-label": "other tenant", spellcheck: "false", size: 12 });
  const form = h("form", { class: "tenant-other" }, input, h("button", { class: "btn small", type: "submit", id: "tenant-go" }, "Go"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const name = input.value.trim();
    if (!TENANT_ID.test(name)) {
      input.setCustomValidity("a tenant id: letters, digits, _ . - (at most 64)");
      input.reportValidity();
      return;
    }
    input.setCustomValidity("");
    pick(name);
  });
  input.addEventListener("input", () => input.setCustomValidity(""));
  return form;
}
