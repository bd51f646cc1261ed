// Seed 000's TypeScript example, verbatim, must compile against @orch8/sdk and work
// against the live server (design brief: "must compile and run unchanged").
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { forwardPort, SDK_DIR, TestServer, waitFor } from "../helpers/server.js";

const EXAMPLE = join(SDK_DIR, "examples", "minimal-worker.ts");
const TSC = join(SDK_DIR, "node_modules", "typescript", "bin", "tsc");

// SHA-256 of the seed's code block (from `import` to the loop's closing brace), so the
// check holds even where ../shared/seeds is not checked out beside the repo.
const SEED_SNIPPET_SHA256 = "f3345c2462bff55c5e3763aad097e7d3430dc140e1bf790b79462f8bd99460df";

function seedSnippet(text: string): string {
  const start = text.indexOf('import { Orch8Client } from "@orch8/sdk";');
  const end = text.indexOf("\n}\n", text.indexOf("while (true) {", start)) + 3;
  assert.ok(start >= 0 && end > start, "the example's code block was found");
  return text.slice(start, end);
}

test("examples/minimal-worker.ts begins with seed 000's example, verbatim", () => {
  const example = readFileSync(EXAMPLE, "utf8");
  const snippet = seedSnippet(example);
  assert.ok(example.startsWith(snippet), "nothing precedes the seed's code");
  assert.equal(createHash("sha256").update(snippet).digest("hex"), SEED_SNIPPET_SHA256);
  const seedFile = join(SDK_DIR, "..", "..", "shared", "seeds", "000_73cd677872d35844.txt");
  if (existsSync(seedFile)) assert.equal(snippet, seedSnippet(readFileSync(seedFile, "utf8")));
});

test("the example type-checks with tsc --noEmit, importing @orch8/sdk by package name", async () => {
  assert.ok(existsSync(join(SDK_DIR, "dist", "index.d.ts")), "dist/ is missing: run `make -C sdk-typescript setup`");
  const run = promisify(execFile);
  const { stdout } = await run(process.execPath, [TSC, "--noEmit", "-p", join(SDK_DIR, "examples", "tsconfig.json"), "--listFiles"], { cwd: SDK_DIR });
  assert.match(stdout, /sdk-typescript\/dist\/index\.d\.ts/, "@orch8/sdk resolved to this package's build");
});

test("the example completes a task against the live server on localhost:3001", async () => {
  const server = await TestServer.start();
  const port = await forwardPort(3001, server, 60_000);
  const child = spawn(process.execPath, ["--import", "tsx", EXAMPLE], { cwd: SDK_DIR, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  try {
    const client = server.client();
    const t = await client.enqueue({ handler_name: "process_image", params: { image_url: "cat.png", width: 800 } });
    const done = await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`example exited ${child.exitCode}: ${stderr}`);
      const got = await client.getTask(t.id);
      return got.status === "completed" ? got : undefined;
    }, "the example to complete the task", 20_000, 50);
    assert.deepEqual(done.output, { url: "https://cdn.example.com/processed.png?src=cat.png", width: 800 });
    assert.equal(done.worker_id, "img-worker-1");
  } finally {
    child.kill("SIGTERM");
    await port.close();
    await server.dispose();
  }
});
