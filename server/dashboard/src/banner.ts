// The banner under the header: the server is unreachable (stale data on screen), or calls
// were refused with 403 (P-AUTH-3). Unreachable wins; refusals come back when it clears.
import type { ApiError } from "./api";
import { fill, h } from "./dom";
import { stamp } from "./format";

export class Banner {
  private unreachable: ApiError | null = null;
  private lastOk: string | null = null;
  // Each distinct refusal (a 403's detail) until dismissed: the refresh loop meets the same
  // refusals every few seconds, so a dismissed one stays away until clear().
  private readonly refusals: string[] = [];
  private readonly dismissed = new Set<string>();

  constructor(
    private readonly el: HTMLElement,
    private readonly refreshMs: number,
  ) {}

  /** The server answered (null) or could not be reached; `lastOk` dates the data shown. */
  reachability(err: ApiError | null, lastOk: string | null): void {
    this.unreachable = err;
    this.lastOk = lastOk;
    this.render();
  }

  refused(detail: string): void {
    if (this.dismissed.has(detail) || this.refusals.includes(detail)) return;
    this.refusals.push(detail);
    this.render();
  }

  /** Another key or tenant: earlier refusals, dismissed or not, no longer apply. */
  clear(): void {
    this.refusals.length = 0;
    this.dismissed.clear();
    this.render();
  }

  private render(): void {
    const el = this.el;
    el.hidden = this.unreachable === null && this.refusals.length === 0;
    if (this.unreachable) {
      el.dataset.code = "connection_error";
      fill(
        el,
        h("strong", null, "Server unreachable. "),
        `Cannot reach the Orch8 server at ${location.origin} (${this.unreachable.message.replace(/^cannot reach the server \((.*)\)$/, "$1")}). `,
        this.lastOk ? `Showing data from ${stamp(this.lastOk)}; ` : "",
        `retrying every ${this.refreshMs / 1000} s.`,
      );
    } else if (this.refusals.length) {
      el.dataset.code = "forbidden";
      fill(
        el,
        h("strong", null, "Not allowed with this key (403 forbidden). "),
        h("button", { class: "linkish dismiss", type: "button", id: "banner-dismiss", title: "Hide these messages", onclick: () => {
          for (const d of this.refusals.splice(0)) this.dismissed.add(d);
          this.render();
        } }, "dismiss"),
        h("ul", { class: "refusals" }, this.refusals.map((d) => h("li", { "data-testid": "banner-detail" }, d))),
      );
    }
  }
}
