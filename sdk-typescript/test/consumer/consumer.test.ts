// Issue 14: users install the npm tarball, not this folder. Packs @orch8/sdk (prepack
// builds dist/), installs it into a fresh npm project in a temp dir OUTSIDE the repository,
// and runs the README's own examples (extracted from README.md by their marker comments)
// against a live server, as an ES module and as CommonJS, until real tasks complete.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT, SDK_DIR, TestServer, waitFor } from "../helpers/server.js";

const run = promisify(execFile);
const NPM = "npm";

/** The fenced block right after `<!-- consumer-test: NAME -->` in the README. */
export function readmeBlock(readme: string, name: string): string {
  const marker = `<!-- consumer-test: ${name} -->`;
  const at = readme.indexOf(marker);
  assert.ok(at >= 0, `README.md has no ${marker}`);
  const match = /^```[a-z]*\n([\s\S]*?)^```$/m.exec(readme.slice(at + marker.length));
  assert.ok(match, `no fenced block after ${marker}`);
  return match[1]!;
}

let project: string;
let server: TestServer;

before(async () => {
  const major = Number(process.versions.node.split(".")[0]);
  assert.ok(major >= 20, `Node ${process.version}: the package declares >=20`);
  console.log(`# consumer test on Node ${process.version}`);
  project = mkdtempSync(join(tmpdir(), "orch8-ts-consumer-"));
  assert.ok(relative(REPO_ROOT, project).startsWith(".."), `${project} is outside the repository`);
  // The real release path: npm pack runs prepack (the dual build) in a clean dist/.
  await run(NPM, ["pack", "--silent", "--pack-destination", project], { cwd: SDK_DIR, maxBuffer: 1 << 24 });
  const tarball = readdirSync(project).find((f) => f.endsWith(".tgz"));
  assert.ok(tarball, "npm pack wrote a tarball");
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "orch8-consumer", version: "1.0.0", private: true }));
  await run(NPM, ["install", "--no-audit", "--no-fund", "--prefer-offline", join(project, tarball)], { cwd: project });
  const readme = readFileSync(join(SDK_DIR, "README.md"), "utf8");
  writeFileSync(join(project, "worker.mjs"), readmeBlock(readme, "worker-esm"));
  writeFileSync(join(project, "worker.cjs"), readmeBlock(readme, "worker-cjs"));
  writeFileSync(join(project, "enqueue.mjs"), readmeBlock(readme, "enqueue"));
  server = await TestServer.start();
});

after(async () => {
  await server?.dispose();
  if (project) rmSync(project, { recursive: true, force: true });
});

function start(file: string): { child: ChildProcess; out: () => string } {
  let out = "";
  // Node 20.19+ can require() an ES module; switched off, a .cjs consumer proves the
  // package's own CommonJS build works on every Node 20 (the engines field says >=20).
  const flags = file.endsWith(".cjs") ? ["--no-experimental-require-module"] : [];
  const child = spawn(process.execPath, [...flags, file], {
    cwd: project, env: { ...process.env, ORCH8_URL: server.url }, stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
  return { child, out: () => out };
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise<number | null>((r) => child.once("exit", (code) => r(code)));

test("the tarball ships dist/ (ESM + CJS), LICENSE and README, and no sources or stamps", async () => {
  const { stdout } = await run("tar", ["tzf", join(project, readdirSync(project).find((f) => f.endsWith(".tgz"))!)]);
  const files = stdout.trim().split("\n");
  for (const f of ["package/dist/index.js", "package/dist/index.d.ts", "package/dist/cjs/index.js", "package/dist/cjs/index.d.ts", "package/dist/cjs/package.json",
    "package/dist/otel/index.js", "package/dist/otel/index.d.ts", "package/dist/cjs/otel/index.js", "package/dist/cjs/otel/index.d.ts", "package/LICENSE", "package/README.md"]) {
    assert.ok(files.includes(f), `${f} is packed`);
  }
  assert.equal(files.filter((f) => f.startsWith("package/src/") || f.endsWith(".built") || f.endsWith(".tgz")).length, 0);
});

test("import resolves to the ES module build and require to the CommonJS build", async () => {
  const esm = await run(process.execPath, ["--input-type=module", "-e", 'console.log(import.meta.resolve("@orch8/sdk"))'], { cwd: project });
  assert.match(esm.stdout.trim(), /node_modules\/@orch8\/sdk\/dist\/index\.js$/);
  const cjs = await run(process.execPath, ["-e", 'console.log(require.resolve("@orch8/sdk"))'], { cwd: project });
  assert.match(cjs.stdout.trim(), /node_modules\/@orch8\/sdk\/dist\/cjs\/index\.js$/);
});

for (const [flavour, file] of [["ES module (import)", "worker.mjs"], ["CommonJS (require)", "worker.cjs"]] as const) {
  test(`the README worker as ${flavour} completes real tasks from the README's enqueue script`, async () => {
    const worker = start(file);
    const enqueue = start("enqueue.mjs");
    try {
      // The enqueue script waits for its task forever; a dead worker or a deadline ends the wait.
      const died = exited(worker.child).then((code) => { throw new Error(`the worker exited (${code}) early:\n${worker.out()}`); });
      const deadline = new Promise((_, fail) => setTimeout(() => fail(new Error(`enqueue.mjs still waiting after 30 s:\n${worker.out()}`)), 30_000).unref());
      assert.equal(await Promise.race([exited(enqueue.child), died, deadline]), 0, enqueue.out());
      assert.match(enqueue.out(), /^completed \{ words: 5, longest: 'quick' \}$/m);
      // More work straight through the API: every task completed with the right answer.
      const client = server.client();
      const texts = ["a bb ccc", "one", "lorem ipsum dolor sit amet"];
      const tasks = await client.enqueueBatch(texts.map((text) => ({ handler_name: "word_count", params: { text } })));
      const bad = await client.enqueue({ handler_name: "word_count", params: {} });
      for (const [i, t] of tasks.entries()) {
        const done = await waitFor(async () => {
          const got = await client.getTask(t.id);
          return got.status === "completed" ? got : undefined;
        }, `task ${i} to complete`, 20_000, 50);
        const words = texts[i]!.split(" ");
        assert.deepEqual(done.output, { words: words.length, longest: words.reduce((a, w) => (w.length > a.length ? w : a), "") });
      }
      const failed = await waitFor(async () => {
        const got = await client.getTask(bad.id);
        return got.status === "failed" ? got : undefined;
      }, "the bad task to fail", 20_000, 50);
      assert.equal(failed.error?.code, "bad_input");
    } finally {
      enqueue.child.kill("SIGKILL");
      worker.child.kill("SIGTERM");
    }
    assert.equal(await exited(worker.child), 0, worker.out());
    assert.match(worker.out(), /worker stopped \{[^}]*tasks_completed: 4/, worker.out());
  });
}

test("TypeScript consumers type-check against the packed declarations, as ESM (.mts) and CommonJS (.cts)", async () => {
  const tsc = join(SDK_DIR, "node_modules", "typescript", "bin", "tsc");
  writeFileSync(join(project, "worker.mts"), readFileSync(join(SDK_DIR, "examples", "worker.ts"), "utf8"));
  writeFileSync(join(project, "worker.cts"), [
    'import { PermanentError, Worker, type TaskContext } from "@orch8/sdk";',
    "const worker = new Worker({ handlers: { word_count: (ctx: TaskContext) => { if (typeof ctx.params.text !== \"string\") throw new PermanentError(\"no text\"); return ctx.params.text.length; } } });",
    "void worker.run();",
    "",
  ].join("\n"));
  // No skipLibCheck: the shipped .d.ts files themselves must be valid for a strict project.
  const flags = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--lib", "es2023,dom"];
  for (const file of ["worker.mts", "worker.cts"]) {
    const { stdout } = await run(process.execPath, [tsc, ...flags, "--traceResolution", file], { cwd: project, maxBuffer: 1 << 26 })
      .catch((err: { stdout: string }) => assert.fail(`tsc ${file} failed:\n${err.stdout.split("\n").filter((l) => l.includes("error")).join("\n")}`));
    const want = file === "worker.cts" ? "dist/cjs/index.d.ts" : "dist/index.d.ts";
    assert.match(stdout, new RegExp(`'@orch8/sdk' was successfully resolved to '[^']*node_modules/@orch8/sdk/${want.replace(/[./]/g, "\\$&")}'`));
  }
});

test("issue 18: @opentelemetry/api is an optional peer (not installed); with it, @orch8/sdk/otel loads as ESM and CommonJS", async () => {
  // Every test above ran the main entry in a project without OpenTelemetry.
  assert.equal(existsSync(join(project, "node_modules", "@opentelemetry")), false, "npm installed no OpenTelemetry package");
  const missing = await run(process.execPath, ["--input-type=module", "-e", 'await import("@orch8/sdk/otel")'], { cwd: project }).then(() => "", (err: { stderr: string }) => err.stderr);
  assert.match(missing, /@opentelemetry\/api/, "without the peer, the otel subpath names what is missing");
  const pkg = JSON.parse(readFileSync(join(SDK_DIR, "package.json"), "utf8"));
  await run(NPM, ["install", "--no-audit", "--no-fund", "--prefer-offline", `@opentelemetry/api@${pkg.devDependencies["@opentelemetry/api"]}`], { cwd: project });
  const probe = "const t = openTelemetry(); console.log(typeof t.enqueue, typeof t.worker);";
  const esm = await run(process.execPath, ["--input-type=module", "-e",
    `import { openTelemetry } from "@orch8/sdk/otel"; console.log(import.meta.resolve("@orch8/sdk/otel")); ${probe}`], { cwd: project });
  assert.match(esm.stdout, /node_modules\/@orch8\/sdk\/dist\/otel\/index\.js\nfunction function\n$/);
  const cjs = await run(process.execPath, ["--no-experimental-require-module", "-e",
    `const { openTelemetry } = require("@orch8/sdk/otel"); console.log(require.resolve("@orch8/sdk/otel")); ${probe}`], { cwd: project });
  assert.match(cjs.stdout, /node_modules\/@orch8\/sdk\/dist\/cjs\/otel\/index\.js\nfunction function\n$/);
  // The README's telemetry example type-checks against the packed declarations.
  const tsc = join(SDK_DIR, "node_modules", "typescript", "bin", "tsc");
  writeFileSync(join(project, "telemetry.mts"), readFileSync(join(SDK_DIR, "examples", "telemetry.ts"), "utf8"));
  const flags = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--lib", "es2023,dom"];
  await run(process.execPath, [tsc, ...flags, "telemetry.mts"], { cwd: project, maxBuffer: 1 << 26 })
    .catch((err: { stdout: string }) => assert.fail(`tsc telemetry.mts failed:\n${err.stdout}`));
});
