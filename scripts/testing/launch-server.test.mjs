// node --test scripts/testing/: the shared JS launcher against the real server binary.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LISTENING_LINE, launchServer } from "./launch-server.mjs";

test("resolves on the listening line with a working url; restart keeps port and data", async () => {
  const server = await launchServer({ args: ["--lease-ms", "2000"] });
  try {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(server.url, `http://127.0.0.1:${server.port}`);
    const info = await (await fetch(`${server.url}/info`)).json();
    assert.equal(info.defaults.lease_ms, 2000);
    const created = await fetch(`${server.url}/tasks`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ handler_name: "launcher_test" }),
    });
    const task = await created.json();
    const url = server.url;
    await server.kill();
    assert.equal(server.process.signalCode, "SIGKILL");
    await server.restart();
    assert.equal(server.url, url);
    const again = await (await fetch(`${url}/tasks/${task.id}`)).json();
    assert.equal(again.status, "pending");
  } finally {
    await server.stop();
  }
  assert.equal(server.process.signalCode, "SIGTERM");
});

test("the caller's ORCH8_* environment does not leak into the server; env does", async () => {
  process.env.ORCH8_LEASE_MS = "-1"; // would make the server refuse to start
  try {
    const server = await launchServer({ env: { ORCH8_WAIT_MS: "1234" } });
    try {
      const info = await (await fetch(`${server.url}/info`)).json();
      assert.equal(info.defaults.wait_ms, 1234);
      assert.equal(info.defaults.lease_ms, 60000);
    } finally {
      await server.stop();
    }
  } finally {
    delete process.env.ORCH8_LEASE_MS;
  }
});

test("an early exit rejects with the server's stderr", async () => {
  await assert.rejects(launchServer({ args: ["--lease-ms", "-1"] }), /exited \(code 2\) before listening.*lease_ms must be positive/s);
});

test("the line format", () => {
  assert.equal(LISTENING_LINE.exec("orch8-server listening on http://[::1]:8080")[1], "http://[::1]:8080");
  assert.equal(LISTENING_LINE.exec("orch8-server listening on http://127.0.0.1:80 extra"), null);
});
