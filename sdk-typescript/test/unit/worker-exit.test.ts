// P-SDK-29: once run() returns, nothing the worker started keeps the process alive, so a
// SIGTERM'd process exits at once even when a handler ignores its signal.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const SDK_DIR = fileURLToPath(new URL("../..", import.meta.url));

test("P-SDK-29: a worker process whose handler ignores its signal exits within 1 s of run() resolving", async () => {
  const child = spawn(process.execPath, ["--import", "tsx", "test/fixtures/deaf-worker.ts"], {
    cwd: SDK_DIR, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, GRACE_MS: "300" },
  });
  const events = new Map<string, number>();
  let errText = "";
  let buf = "";
  let onEvent = () => {};
  child.stdout!.on("data", (b: Buffer) => {
    buf += b.toString();
    for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
      const e = JSON.parse(buf.slice(0, nl)) as { event: string; t: number };
      events.set(e.event, e.t);
      buf = buf.slice(nl + 1);
      onEvent();
    }
  });
  child.stderr!.on("data", (b: Buffer) => (errText += b.toString()));
  const exited = new Promise<number>((resolve) => child.once("exit", () => resolve(Date.now())));
  // Bounded waits on events, never a bare sleep.
  const waitEvent = (name: string, ms: number) => new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${name} within ${ms} ms; stderr: ${errText}`)), ms);
    onEvent = () => {
      if (events.has(name)) { clearTimeout(timer); resolve(); }
    };
    onEvent();
  });
  try {
    await waitEvent("start", 20_000);
    child.kill("SIGTERM");
    await waitEvent("resolved", 10_000);
    const deadline = new Promise<number>((resolve) => setTimeout(() => resolve(Number.NaN), 5_000).unref());
    const exitAt = await Promise.race([exited, deadline]);
    const lived = exitAt - events.get("resolved")!;
    assert.ok(lived < 1000, `the process lived ${Number.isNaN(lived) ? "more than 5000" : lived} ms after run() resolved (a handler's timer held it)`);
  } finally {
    child.kill("SIGKILL");
  }
});
