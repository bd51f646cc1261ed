#!/usr/bin/env node
// Builds the package twice from src/ (issue 14): ES modules into dist/ (what `import`
// resolves) and CommonJS into dist/cjs/ (what `require` resolves). dist/cjs/package.json
// says "commonjs" so Node reads those .js files as CJS inside this "type": "module" package.
// Run by `npm run build`, `make build` and `prepack`, so `npm pack` always ships a fresh dist/.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const dist = join(root, "dist");
// Built aside and swapped in, so a failed compile never leaves other users of dist/
// (the conformance adapter, bench) without a build. Per-process names: two builds at once
// (several `make setup`s in one tree) must not delete each other's half-written output.
const next = join(root, `.dist-next-${process.pid}`);

rmSync(next, { recursive: true, force: true });
for (const [config, out] of [["tsconfig.build.json", next], ["tsconfig.cjs.json", join(next, "cjs")]]) {
  execFileSync(process.execPath, [tsc, "-p", config, "--outDir", out], { cwd: root, stdio: "inherit" });
}
mkdirSync(join(next, "cjs"), { recursive: true });
writeFileSync(join(next, "cjs", "package.json"), JSON.stringify({ type: "commonjs" }) + "\n");
// Two renames, so readers of dist/ see it missing for microseconds, not for a whole rmSync.
const old = join(root, `.dist-old-${process.pid}`);
rmSync(old, { recursive: true, force: true });
if (existsSync(dist)) renameSync(dist, old);
renameSync(next, dist);
rmSync(old, { recursive: true, force: true });
