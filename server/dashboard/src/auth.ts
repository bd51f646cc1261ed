// The API-key prompt: shown when a call answers 401 (P-AUTH-1). The key is kept in
// sessionStorage (by api.ts) so it lasts for this tab only.
import { byId, fill, h } from "./dom";

export function promptForKey(rejected: boolean): Promise<string> {
  const root = byId("auth");
  return new Promise((resolve) => {
    const input = h("input", { id: "api-key", type: "password", autocomplete: "off", placeholder: "API key", required: true });
    const form = h(
      "form",
      { class: "auth-card", role: "dialog", "aria-modal": "true", "aria-labelledby": "auth-title" },
      h("h2", { id: "auth-title" }, "API key required"),
      h(
        "p",
        { class: "muted" },
        "This server only answers requests that carry an API key (Authorization: Bearer …). ",
        "The dashboard keeps it in this browser tab until you close it.",
      ),
      rejected ? h("div", { class: "problem", role: "alert", "data-code": "unauthorized" }, h("div", { class: "problem-head" }, h("strong", null, "That key was rejected"), h("span", { class: "problem-code" }, "401 · unauthorized"))) : null,
      h("label", { class: "field wide" }, h("span", null, "API key"), input),
      h("div", { class: "row" }, h("button", { class: "btn primary", type: "submit", id: "api-key-submit" }, "Use this key")),
    );
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const key = input.value.trim();
      if (!key) return;
      root.hidden = true;
      fill(root);
      resolve(key);
    });
    fill(root, form);
    root.hidden = false;
    input.focus();
  });
}
