// Issue 14: users install the npm tarball, not this folder. Packs @orch8/sdk (prepack builds
// dist/) and installs it into two fresh npm projects outside the repository, a CommonJS one
// (`npm init -y`) and a `"type": "module"` one. Issue 32: in each of them every code block
// of README.md runs as the README says (scenarios.ts), or is marked not-runnable and listed
// here as skipped.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SDK_DIR } from "../helpers/server.js";
import { exec, pinned, Project, type Kind } from "./project.js";
import { readmeBlocks } from "./readme.js";
import { SCENARIOS } from "./scenarios.js";

const KINDS: Kind[] = ["commonjs", "module"];
const blocks = readmeBlocks(readFileSync(join(SDK_DIR, "README.md"), "utf8"));
let packDir: string;
let tarball: string;
const projects = new Map<Kind, Project>();

before(async () => {
  const major = Number(process.versions.node.split(".")[0]);
  assert.ok(major >= 20, `Node ${process.version}: the package declares >=20`);
  console.log(`# consumer test on Node ${process.version}`);
  packDir = mkdtempSync(join(tmpdir(), "orch8-ts-pack-"));
  // The real release path: npm pack runs prepack (the dual build) in a clean dist/.
  await exec("npm", ["pack", "--silent", "--pack-destination", packDir], { cwd: SDK_DIR, maxBuffer: 1 << 24 });
  const name = readdirSync(packDir).find((f) => f.endsWith(".tgz"));
  assert.ok(name, "npm pack wrote a tarball");
  tarball = join(packDir, name);
  for (const kind of KINDS) projects.set(kind, await Project.create(kind, tarball));
});

after(() => {
  for (const project of projects.values()) project.dispose();
  if (packDir) rmSync(packDir, { recursive: true, force: true });
});

const project = (kind: Kind): Project => projects.get(kind)!;

test("the tarball ships dist/ (ESM + CJS), LICENSE and README, and no sources or stamps", async () => {
  const { stdout } = await exec("tar", ["tzf", tarball]);
  const files = stdout.trim().split("\n");
  for (const f of ["package/dist/index.js", "package/dist/index.d.ts", "package/dist/cjs/index.js", "package/dist/cjs/index.d.ts", "package/dist/cjs/package.json",
    "package/dist/otel/index.js", "package/dist/otel/index.d.ts", "package/dist/cjs/otel/index.js", "package/dist/cjs/otel/index.d.ts",
    "package/dist/testing/index.js", "package/dist/testing/index.d.ts", "package/dist/cjs/testing/index.js", "package/dist/cjs/testing/index.d.ts",
    "package/LICENSE", "package/README.md"]) {
    assert.ok(files.includes(f), `${f} is packed`);
  }
  assert.equal(files.filter((f) => f.startsWith("package/src/") || f.endsWith(".built") || f.endsWith(".tgz")).length, 0);
});

test("import resolves to the ES module build and require to the CommonJS build, in both kinds of project", async () => {
  for (const kind of KINDS) {
    const cwd = project(kind).dir;
    const esm = await exec(process.execPath, ["--input-type=module", "-e", 'console.log(import.meta.resolve("@orch8/sdk"))'], { cwd });
    assert.match(esm.stdout.trim(), /node_modules\/@orch8\/sdk\/dist\/index\.js$/);
    const cjs = await exec(process.execPath, ["-e", 'console.log(require.resolve("@orch8/sdk"))'], { cwd });
    assert.match(cjs.stdout.trim(), /node_modules\/@orch8\/sdk\/dist\/cjs\/index\.js$/);
    const kit = await exec(process.execPath, ["--input-type=module", "-e", 'console.log(import.meta.resolve("@orch8/sdk/testing"))'], { cwd });
    assert.match(kit.stdout.trim(), /node_modules\/@orch8\/sdk\/dist\/testing\/index\.js$/);
    const kitCjs = await exec(process.execPath, ["-e", 'console.log(require.resolve("@orch8/sdk/testing"))'], { cwd });
    assert.match(kitCjs.stdout.trim(), /node_modules\/@orch8\/sdk\/dist\/cjs\/testing\/index\.js$/);
  }
});

test("issue 18: @opentelemetry/api is an optional peer (not installed); with it, @orch8/sdk/otel loads as ESM and CommonJS", async () => {
  const cwd = project("commonjs").dir;
  assert.equal(existsSync(join(cwd, "node_modules", "@opentelemetry")), false, "npm installed no OpenTelemetry package");
  const missing = await exec(process.execPath, ["--input-type=module", "-e", 'await import("@orch8/sdk/otel")'], { cwd }).then(() => "", (err: { stderr: string }) => err.stderr);
  assert.match(missing, /@opentelemetry\/api/, "without the peer, the otel subpath names what is missing");
  await project("commonjs").install(pinned("@opentelemetry/api"));
  const probe = "const t = openTelemetry(); console.log(typeof t.enqueue, typeof t.worker);";
  const esm = await exec(process.execPath, ["--input-type=module", "-e",
    `import { openTelemetry } from "@orch8/sdk/otel"; console.log(import.meta.resolve("@orch8/sdk/otel")); ${probe}`], { cwd });
  assert.match(esm.stdout, /node_modules\/@orch8\/sdk\/dist\/otel\/index\.js\nfunction function\n$/);
  const cjs = await exec(process.execPath, ["--no-experimental-require-module", "-e",
    `const { openTelemetry } = require("@orch8/sdk/otel"); console.log(require.resolve("@orch8/sdk/otel")); ${probe}`], { cwd });
  assert.match(cjs.stdout, /node_modules\/@orch8\/sdk\/dist\/cjs\/otel\/index\.js\nfunction function\n$/);
});

test("every README block is run by a scenario or marked not-runnable", async (t) => {
  const runnable = blocks.filter((b) => b.file).map((b) => b.file!);
  assert.equal(new Set(runnable).size, runnable.length, `two README blocks are saved as the same file: ${runnable}`);
  const covered = new Set(SCENARIOS.flatMap((s) => s.files));
  assert.deepEqual(runnable.filter((f) => !covered.has(f)), [], "README blocks that no scenario runs");
  assert.deepEqual([...covered].filter((f) => !runnable.includes(f)), [], "scenario files that are no README block");
  // Each not-runnable block, listed as a skipped test with the README's own reason.
  for (const b of blocks.filter((b) => b.skip)) await t.test(`README.md:${b.line} (${b.lang})`, { skip: b.skip }, () => {});
});

for (const kind of KINDS) {
  test(`the README's examples run in a fresh ${kind} project`, async (t) => {
    const p = project(kind);
    // What the README tells a user to add: tsx to run .ts files, typescript to check them,
    // Node's types for the node:test example, and the optional OpenTelemetry peer for the
    // telemetry example.
    await p.install("--save-dev", pinned("tsx"), pinned("typescript"), pinned("@types/node"));
    await p.install(pinned("@opentelemetry/api"));
    for (const b of blocks) if (b.file) p.write(b.file, b.code);

    await t.test("tsc, configured by `tsc --init` as the README says, type-checks every .ts block", async () => {
      await exec("npx", ["tsc", "--init"], { cwd: p.dir });
      if (kind === "commonjs") {
        // The README: in a CommonJS project turn verbatimModuleSyntax off, or TS1295 refuses every import.
        const config = readFileSync(join(p.dir, "tsconfig.json"), "utf8");
        assert.match(config, /"verbatimModuleSyntax": true/);
        p.write("tsconfig.json", config.replace('"verbatimModuleSyntax": true', '"verbatimModuleSyntax": false'));
      }
      // The examples the README links to, too; and the shipped .d.ts files checked in full.
      for (const name of ["worker", "telemetry"]) p.write(`example-${name}.ts`, readFileSync(join(SDK_DIR, "examples", `${name}.ts`), "utf8"));
      const { stdout } = await exec("npx", ["tsc", "-p", ".", "--noEmit", "--skipLibCheck", "false", "--traceResolution"], { cwd: p.dir, maxBuffer: 1 << 27 })
        .catch((err: { stdout: string }) => assert.fail(`tsc failed in the ${kind} project:\n${err.stdout.split("\n").filter((l) => l.includes("error")).join("\n")}`));
      const want = kind === "commonjs" ? "dist/cjs/index.d.ts" : "dist/index.d.ts";
      assert.match(stdout, new RegExp(`'@orch8/sdk' was successfully resolved to '[^']*node_modules/@orch8/sdk/${want.replace(/[./]/g, "\\$&")}'`));
    });

    for (const scenario of SCENARIOS) await t.test(scenario.files.join(" + "), () => scenario.run(p));
  });
}
