// A scripted fetch for unit tests: records every request and answers from a queue of
// responders, so request shapes, headers and error mapping are checked without a server.

export interface Recorded {
  method: string;
  url: URL;
  headers: Headers;
  body: unknown;
  signal: AbortSignal;
}

export type Responder = (req: Recorded) => Response | Promise<Response>;

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  const type = status >= 400 ? "application/problem+json" : "application/json";
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": type, ...headers } });
}

export function problem(status: number, code: string, headers: Record<string, string> = {}): Response {
  return json(status, { type: `urn:orch8:problem:${code}`, title: code, status, detail: `detail of ${code}`, code, errors: [] }, headers);
}

export function noContent(): Response {
  return new Response(null, { status: 204 });
}

/** A fetch whose n-th call is answered by the n-th responder (the last one repeats). */
export function mockFetch(...responders: Responder[]) {
  const calls: Recorded[] = [];
  const fetch = async (input: Request): Promise<Response> => {
    const text = await input.text();
    const rec: Recorded = {
      method: input.method,
      url: new URL(input.url),
      headers: input.headers,
      body: text ? JSON.parse(text) : undefined,
      signal: input.signal,
    };
    calls.push(rec);
    const responder = responders[Math.min(calls.length - 1, responders.length - 1)];
    if (!responder) throw new Error("mockFetch: no responder");
    return responder(rec);
  };
  return { fetch, calls };
}

/** A responder that fails like a refused connection. */
export const refused: Responder = () => {
  throw new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
};
