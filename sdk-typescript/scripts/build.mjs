#!/usr/bin/env node
// Builds the package twice from src/ (issue 14): ES modules into dist/ (what `import`
// resolves) and CommonJS into dist/cjs/ (what `require` resolves). dist/cjs/package.json
// says "commonjs" so Node reads those .js files as CJS inside this "type": "module" package.
// Run by `npm run build`, `make build` and `prepack`, so `npm pack` always ships a fresh dist/.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const dist = join(root, "dist");

rmSync(dist, { recursive: true, force: true });
for (const config of ["tsconfig.build.json", "tsconfig.cjs.json"]) {
  execFileSync(process.execPath, [tsc, "-p", config], { cwd: root, stdio: "inherit" });
}
mkdirSync(join(dist, "cjs"), { recursive: true });
writeFileSync(join(dist, "cjs", "package.json"), JSON.stringify({ type: "commonjs" }) + "\n");
