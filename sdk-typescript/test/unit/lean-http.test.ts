// LeanHttp, the worker's node:http sender (src/lean-http.ts), against scripted loopback
// servers: what it sends, kept-alive and stale connections, cancels, early answers,
// redirects and the errors a caller reads.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import * as net from "node:net";
import type { AddressInfo } from "node:net";
import { Orch8Client, UnavailableError } from "../../src/index.js";
import { proxyConfigured } from "../../src/lean-http.js";
import { LEAN_HTTP, Transport } from "../../src/transport.js";

/** Listens on a free loopback port; returns the base URL and a closer. */
async function listen(server: net.Server): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  server.on("connection", (sock: net.Socket) => {
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => {
      for (const sock of sockets) sock.destroy(); // the client's kept-alive sockets too
      server.close(() => r());
    }),
  };
}

function transport(baseUrl: string, extra: Partial<ConstructorParameters<typeof Transport>[0]> = {}): Transport {
  return new Transport({ baseUrl, timeoutMs: 5000, maxRetries: 0, lean: true, ...extra });
}

const signal = () => AbortSignal.timeout(5000);

/** Resolves once `check()` holds, polling each turn; fails after `ms`. */
async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

test("sends the templated path, the JSON body and the client's headers over one kept-alive connection", async () => {
  const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ directive: "running", echoed: JSON.parse(body || "null") }));
    });
  });
  server.on("connection", () => connections++);
  const s = await listen(server);
  try {
    const t = transport(`${s.url}/base/`, { apiKey: "k1", tenant: "acme" });
    assert.ok(t.lean, "an http:// transport asked for lean uses LeanHttp");
    for (const n of [1, 2]) {
      const r = await t.send("POST", "/workers/{worker_id}/heartbeat", { path: { worker_id: "w 1/é" }, body: { n }, parseAs: "json", signal: signal() });
      assert.equal(r.response.status, 200);
      assert.deepEqual(r.data, { directive: "running", echoed: { n } });
    }
    assert.equal(seen[0]!.url, "/base/workers/w%201%2F%C3%A9/heartbeat");
    assert.equal(seen[0]!.method, "POST");
    assert.equal(seen[0]!.headers["content-type"], "application/json");
    assert.equal(seen[0]!.headers["content-length"], String(Buffer.byteLength(seen[0]!.body)));
    assert.equal(seen[0]!.headers.authorization, "Bearer k1");
    assert.equal(seen[0]!.headers["x-tenant-id"], "acme");
    assert.match(seen[0]!.headers["user-agent"] ?? "", /^orch8-typescript\//);
    assert.equal(connections, 1, "the second request reused the first connection");
  } finally {
    await s.close();
  }
});

test("reads an answer as openapi-fetch does: 204 and empty bodies give no data, a non-JSON error stays text", async () => {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url === "/none") {
        res.writeHead(204);
        res.end();
      } else if (req.url === "/text") {
        res.writeHead(502, { "Content-Type": "text/plain", "Retry-After": "2" });
        res.end("bad gateway");
      } else {
        res.writeHead(404, { "Content-Type": "application/problem+json" });
        res.end(JSON.stringify({ code: "not_found", status: 404 }));
      }
    });
  });
  const s = await listen(server);
  try {
    const t = transport(s.url);
    const none = await t.send("DELETE", "/none", { parseAs: "json", signal: signal() });
    assert.equal(none.response.status, 204);
    assert.equal(none.data, undefined);
    const text = await t.send("GET", "/text", { parseAs: "json", signal: signal() });
    assert.equal(text.response.ok, false);
    assert.equal(text.error, "bad gateway");
    assert.equal(text.response.headers.get("retry-after"), "2");
    const problem = await t.send("GET", "/problem", { parseAs: "json", signal: signal() });
    assert.deepEqual(problem.error, { code: "not_found", status: 404 });
  } finally {
    await s.close();
  }
});

test("a reused connection the server dropped before answering is replaced, and the request sent again", async () => {
  let connections = 0;
  let requests = 0;
  // First connection: answers its first request, then drops the connection when the second
  // arrives, without a byte of answer (a keep-alive socket the server closed meanwhile).
  const server = net.createServer((sock) => {
    const id = ++connections;
    let served = 0;
    sock.on("data", (d) => {
      if (!d.toString("latin1").includes("\r\n\r\n")) return; // headers and body come in one write here
      requests++;
      served++;
      if (id === 1 && served === 2) {
        sock.destroy();
        return;
      }
      const body = JSON.stringify({ on: id });
      sock.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: keep-alive\r\n\r\n${body}`);
    });
  });
  const s = await listen(server);
  try {
    const t = transport(s.url);
    const first = await t.send("POST", "/x", { body: {}, parseAs: "json", signal: signal() });
    assert.deepEqual(first.data, { on: 1 });
    const second = await t.send("POST", "/x", { body: {}, parseAs: "json", signal: signal() });
    assert.deepEqual(second.data, { on: 2 }, "answered on a new connection");
    assert.equal(requests, 3);
  } finally {
    await s.close();
  }
});

test("a cancelled request drops its connection at once, so the server sees the caller leave", async () => {
  let closed = false;
  let arrived = false;
  const server = http.createServer((req) => {
    arrived = true;
    req.socket.on("close", () => (closed = true)); // never answered: a long-poll
  });
  const s = await listen(server);
  try {
    const t = transport(s.url);
    const ctl = new AbortController();
    const call = t.send("POST", "/workers/tasks/poll/batch", { body: { wait_ms: 30000 }, parseAs: "json", signal: ctl.signal });
    await until(() => arrived, "the request to arrive");
    const why = new Error("shutdown");
    ctl.abort(why);
    await assert.rejects(call, (e) => e === why);
    await until(() => closed, "the server to see the connection close");
  } finally {
    await s.close();
  }
});

test("an answer sent before the body was read (413) is returned, not a write error", async () => {
  const server = net.createServer((sock) => {
    let head = "";
    sock.on("data", (d) => {
      if (head.includes("\r\n\r\n")) return;
      head += d.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      const body = JSON.stringify({ code: "payload_too_large", status: 413 });
      sock.end(`HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/problem+json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    });
    sock.on("error", () => {}); // the client's unread body resets it
  });
  const s = await listen(server);
  try {
    const t = transport(s.url);
    const big = { items: Array.from({ length: 2000 }, (_, i) => ({ task_id: `t${i}`, output: "x".repeat(2000) })) };
    const r = await t.send("POST", "/workers/tasks/complete/batch", { body: big, parseAs: "json", signal: signal() });
    assert.equal(r.response.status, 413);
    assert.deepEqual(r.error, { code: "payload_too_large", status: 413 });
  } finally {
    await s.close();
  }
});

test("a redirected call is sent again through fetch, which follows it", async () => {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url === "/old") {
        res.writeHead(307, { Location: "/new" });
        res.end();
      } else {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ at: req.url }));
      }
    });
  });
  const s = await listen(server);
  try {
    const r = await transport(s.url).send("POST", "/old", { body: {}, parseAs: "json", signal: signal() });
    assert.deepEqual(r.data, { at: "/new" });
  } finally {
    await s.close();
  }
});

test("a refused connection reads as the socket's error through the client (P-SDK-22)", async () => {
  const server = net.createServer();
  const s = await listen(server);
  await s.close(); // the port is free again: connecting is refused
  const client = new Orch8Client({ baseUrl: s.url, maxRetries: 0, [LEAN_HTTP]: true });
  await assert.rejects(client.getWorker("w"), (e) => {
    assert.ok(e instanceof UnavailableError);
    assert.equal(e.code, "connection_error");
    assert.match(e.message, new RegExp(`\\(${s.url.replace(/[./]/g, "\\$&")}\\): connect ECONNREFUSED 127\\.0\\.0\\.1:\\d+$`));
    return true;
  });
});

test("fetch is kept for https://, a given fetch, a proxy variable, and a client not asking for it", () => {
  assert.equal(transport("https://orch8.example").lean, undefined);
  assert.equal(transport("http://localhost:3001", { fetch: async () => new Response("{}") }).lean, undefined);
  assert.equal(transport("http://localhost:3001", { lean: false }).lean, undefined);
  assert.equal(proxyConfigured({ HTTP_PROXY: "http://proxy:3128" }), true);
  assert.equal(proxyConfigured({ all_proxy: "socks5://proxy" }), true);
  assert.equal(proxyConfigured({ NO_PROXY: "*" }), false);
});
