// Who the dashboard's key is (GET /whoami, P-AUTH-5): shown in the header, and the one
// place the views ask whether to offer operator actions (P-AUTH-2).
import { api, ApiError, type Principal, type Role } from "./api";
import { fill, h } from "./dom";

let principal: Principal | null = null;

// P-AUTH-2: cancel, retry, manual resolve, worker directives and queue controls are
// operator (and admin) calls; other roles do not get the buttons.
const OPERATES: Role[] = ["operator", "admin"];

/** The caller as of the last /whoami, or null while unknown (not asked yet, or unreachable). */
export function current(): Principal | null {
  return principal;
}

/** Whether to render the action buttons; false while the role is unknown. */
export function canOperate(): boolean {
  return principal !== null && OPERATES.includes(principal.role);
}

// P-WF-7: producers may cancel an instance as they may cancel a task (P-AUTH-2 role table of
// cancelInstance); P-WF-8 retry stays an operator call.
const CANCELS_INSTANCES: Role[] = ["producer", "operator", "admin"];

/** Whether to render an instance's Cancel button; false while the role is unknown. */
export function canCancelInstances(): boolean {
  return principal !== null && CANCELS_INSTANCES.includes(principal.role);
}

/** Ask the server again (on load and whenever the key changes); null when that failed. */
export async function refreshPrincipal(): Promise<Principal | null> {
  try {
    principal = await api.whoami();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    principal = null;
  }
  return principal;
}

/** "key team-a-ops · operator · tenant team-a" in the header; "no API keys" on an open server. */
export function renderPrincipal(el: HTMLElement, tenant: string | null): void {
  const p = principal;
  if (!p) {
    fill(el);
    return;
  }
  el.dataset.role = p.role;
  fill(
    el,
    p.auth_required
      ? h("span", { "data-testid": "key-id", title: "The id of the API key (never the key itself)" }, "key ", h("b", { class: "mono" }, p.key_id ?? "?"))
      : h("span", { "data-testid": "key-id", title: "The server has no API keys: everyone is admin" }, "no API keys"),
    h("span", { class: "role-chip", "data-testid": "role", title: roleHelp(p.role) }, p.role),
    h("span", { "data-testid": "principal-tenant" }, "tenant ", h("b", { class: "mono" }, tenant ?? p.tenant)),
  );
}

function roleHelp(role: Role): string {
  return {
    admin: "Every operation, in any tenant",
    operator: "Everything in its tenant: lists, manual resolve, retry, worker directives, queue controls",
    producer: "Enqueue, get and cancel tasks; no lists and no operator actions",
    worker: "The worker endpoints only; the dashboard's lists need an operator key",
    metrics: "GET /metrics only; the dashboard's lists need an operator key",
  }[role];
}
