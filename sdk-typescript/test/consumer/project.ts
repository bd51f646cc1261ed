// A fresh npm project in a temp dir outside the repository, made as a user makes one:
// `npm init -y` (CommonJS: npm's default) or that plus `npm pkg set type=module`, with the
// packed tarball installed. Files are run with the command the README gives for them.
import assert from "node:assert/strict";
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT, SDK_DIR } from "../helpers/server.js";

export const exec = promisify(execFile);
export type Kind = "commonjs" | "module";

/** A program started from the project; `out()` is its stdout and stderr so far. */
export interface Running {
  child: ChildProcess;
  out(): string;
  exited: Promise<number | null>;
}

/** `name@version` of a devDependency of this SDK, so consumers get the tested versions. */
export function pinned(name: string): string {
  const pkg = JSON.parse(readFileSync(join(SDK_DIR, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
  const version = pkg.devDependencies[name];
  assert.ok(version, `${name} is a devDependency of @orch8/sdk`);
  return `${name}@${version}`;
}

export class Project {
  private constructor(readonly kind: Kind, readonly dir: string) {}

  static async create(kind: Kind, tarball: string): Promise<Project> {
    const dir = mkdtempSync(join(tmpdir(), `orch8-ts-${kind}-`));
    assert.ok(relative(REPO_ROOT, dir).startsWith(".."), `${dir} is outside the repository`);
    const project = new Project(kind, dir);
    await exec("npm", ["init", "-y"], { cwd: dir });
    if (kind === "module") await exec("npm", ["pkg", "set", "type=module"], { cwd: dir });
    const type = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { type?: string }).type ?? "commonjs";
    assert.equal(type, kind, "package.json's type is the project kind");
    await project.install(tarball);
    return project;
  }

  async install(...specs: string[]): Promise<void> {
    await exec("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", ...specs], { cwd: this.dir, maxBuffer: 1 << 24 });
  }

  write(file: string, text: string): void {
    writeFileSync(join(this.dir, file), text);
  }

  /**
   * Starts `file` as the README says to run it: `node FILE`, or `npx tsx FILE` for a `.ts`
   * file. npx runs node_modules/.bin/tsx, called here directly because npx does not pass
   * SIGTERM on to its child (a terminal's Ctrl-C reaches the whole process group instead).
   * A `.cjs` file runs with require(esm) off, so the package's own CommonJS build is what
   * loads, as on every Node 20 the engines field allows.
   */
  start(file: string, env: Record<string, string>): Running {
    const [cmd, args] = file.endsWith(".ts")
      ? [join(this.dir, "node_modules", ".bin", "tsx"), [file]]
      : [process.execPath, file.endsWith(".cjs") ? ["--no-experimental-require-module", file] : [file]];
    let out = "";
    const child = spawn(cmd, args, { cwd: this.dir, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    return { child, out: () => out, exited };
  }

  /** Runs `file` to its end; fails if it is still running after `timeoutMs`. */
  async run(file: string, env: Record<string, string>, timeoutMs = 60_000): Promise<{ code: number | null; out: string }> {
    const running = this.start(file, env);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, fail) => {
      timer = setTimeout(() => fail(new Error(`${file} still running after ${timeoutMs} ms:\n${running.out()}`)), timeoutMs);
    });
    try {
      return { code: await Promise.race([running.exited, deadline]), out: running.out() };
    } finally {
      clearTimeout(timer);
      running.child.kill("SIGKILL");
    }
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
