// The worker's own HTTP/1.1 sender for http:// servers: node:http on a keep-alive agent, in
// place of fetch. A Worker that makes its own client sends through it (see Transport); the
// request, retries, timeouts and errors are the Transport's either way. Why: fetch (undici)
// builds a Request, a Response, web streams and an AbortSignal for every request: about
// three times node:http's CPU per request here, and close to half of a no-op worker's CPU
// per task (bench/results/2026-11-28-typescript-worker-cpu.md).
import * as http from "node:http";

/** What the Transport reads of an answer: the parts fetch's Response gives it. */
export interface AnswerHead {
  status: number;
  ok: boolean;
  headers: { get(name: string): string | null };
}

export interface LeanAnswer {
  response: AnswerHead;
  body: string;
}

/** A reused keep-alive socket the server had closed fails before any answer byte: sent again. */
const STALE_CODES = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED"]);
const MAX_STALE_RESENDS = 3;

class HeaderView {
  constructor(private readonly raw: http.IncomingHttpHeaders) {}

  get(name: string): string | null {
    const v = this.raw[name.toLowerCase()];
    if (v === undefined) return null;
    return Array.isArray(v) ? v.join(", ") : v;
  }
}

/** True for the platform's proxy settings that fetch may honour and node:http never does. */
export function proxyConfigured(env: Record<string, string | undefined>): boolean {
  return ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"].some((k) => !!env[k]);
}

/**
 * True when a dispatcher other than undici's plain Agent was installed for fetch (a
 * ProxyAgent through `setGlobalDispatcher`, say): fetch is then what the user configured.
 */
export function customFetchDispatcher(): boolean {
  const d = (globalThis as Record<symbol, unknown>)[Symbol.for("undici.globalDispatcher.1")];
  return d !== undefined && d !== null && (d as { constructor?: { name?: string } }).constructor?.name !== "Agent";
}

export class LeanHttp {
  private readonly agent = new http.Agent({ keepAlive: true });
  private readonly host: string;
  private readonly port: number;
  private readonly prefix: string;

  constructor(baseUrl: string, private readonly baseHeaders: Record<string, string>) {
    const u = new URL(baseUrl);
    if (u.protocol !== "http:") throw new Error(`LeanHttp speaks http:// only, not ${u.protocol}`);
    this.host = u.hostname.replace(/^\[|\]$/g, ""); // an IPv6 literal without its brackets
    this.port = u.port === "" ? 80 : Number(u.port);
    this.prefix = u.pathname.replace(/\/+$/, "");
  }

  /** One request; rejects with the signal's reason when it fires, with the socket's error otherwise. */
  async send(method: string, path: string, body: string | undefined, signal: AbortSignal): Promise<LeanAnswer> {
    for (let resend = 0; ; resend++) {
      try {
        return await this.once(method, path, body, signal);
      } catch (e) {
        const stale = e as { reused?: boolean; code?: string };
        if (!stale.reused || !STALE_CODES.has(stale.code ?? "") || resend >= MAX_STALE_RESENDS || signal.aborted) throw e;
      }
    }
  }

  private once(method: string, path: string, body: string | undefined, signal: AbortSignal): Promise<LeanAnswer> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<LeanAnswer>((resolve, reject) => {
      const headers: Record<string, string | number> = { ...this.baseHeaders };
      let payload: Buffer | undefined;
      if (body !== undefined) {
        payload = Buffer.from(body, "utf8");
        headers["Content-Type"] = "application/json";
        headers["Content-Length"] = payload.length;
      }
      const req = http.request({ agent: this.agent, host: this.host, port: this.port, method, path: this.prefix + path, headers });
      let answered = false;
      let settled = false;
      const finish = (err: unknown, answer?: LeanAnswer): void => {
        if (settled) return;
        settled = true;
        signal.removeEventListener("abort", onAbort);
        if (err === undefined) resolve(answer!);
        else reject(err);
      };
      // A cancelled long-poll drops its connection, so the server sees the caller leave.
      const onAbort = (): void => {
        req.destroy();
        finish(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      req.on("error", (err: NodeJS.ErrnoException) => {
        // Marked for send()'s one-more-time rule: a reused socket, no answer byte yet.
        if (!answered && req.reusedSocket) Object.assign(err, { reused: true });
        finish(err);
      });
      req.on("response", (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", (err) => finish(err));
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          const response = { status, ok: status >= 200 && status <= 299, headers: new HeaderView(res.headers) };
          finish(undefined, { response, body: Buffer.concat(chunks).toString("utf8") });
        });
        res.on("close", () => {
          if (!res.complete) finish(Object.assign(new Error("the server closed the connection before the whole answer"), { code: "ECONNRESET" }));
        });
      });
      req.end(payload);
    });
  }
}
