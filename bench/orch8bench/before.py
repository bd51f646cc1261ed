"""The SDK workers of bench/sdk/ on the SDKs as they were before issue 18 (telemetry).

Issue 18 promises that an SDK without a telemetry object costs what it cost before. The
SDK phase proves it in the same run: next to today's worker it runs the same worker
program on each SDK exported from BASELINE_REV (`git archive`, no checkout: the shared
working tree is never touched) into the run's workdir:

- Python: the old `sdk-python/orch8` first on PYTHONPATH (the root venv's editable install
  is found after PYTHONPATH, so the old package wins; checked by `origin` below);
- TypeScript: the old `sdk-typescript/src` compiled with today's node_modules (symlinked)
  to `dist/`, passed to ts_worker.mjs as ORCH8_TS_SDK;
- Go: bench/sdk/goworker built with `-tags orch8before` (no orch8otel import) and its
  `replace` pointed at the old sdk-go.

Each returns (command, extra environment) for sdks.py, or raises RuntimeError.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

from orch8bench.env import BENCH, REPO, log

# Contract 1.3.0 (ClaimedTask.ready_at), the last commit before any SDK's telemetry code.
BASELINE_REV = "3ac7302ab422aa63b984d8a5dd92f549513ccea8"
SDK_MODULE = "github.com/orch8/orch8-workers/sdk-go"


def _run(cmd: list[str], cwd: Path, what: str, env: dict[str, str] | None = None) -> str:
    full = {**os.environ, **(env or {})}
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env=full)
    if out.returncode != 0:
        raise RuntimeError(f"{what}: {' '.join(cmd)}: {(out.stderr or out.stdout)[-1500:]}")
    return out.stdout


def export(rev: str, path: str, dest: Path) -> Path:
    """`git archive rev path` extracted under dest; returns dest / path."""
    blob = subprocess.run(
        ["git", "archive", "--format=tar", rev, path], cwd=REPO, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(dest, filter="data")
    return dest / path


def python_worker(url: str, c: str, handler: str, dest: Path, rev: str) -> tuple[list, dict]:
    sdk = export(rev, "sdk-python/orch8", dest)
    py = str(REPO / ".venv" / "bin" / "python")
    env = {"PYTHONPATH": str(sdk.parent)}
    origin = _run([py, "-c", "import orch8; print(orch8.__file__)"], dest, "python before", env)
    if not origin.startswith(str(sdk)):  # the editable install won: we would measure today's
        raise RuntimeError(f"python before: imports {origin.strip()}, not {sdk}")
    return [py, str(BENCH / "sdk" / "py_worker.py"), url, c, handler], env


def typescript_worker(url: str, c: str, handler: str, dest: Path, rev: str) -> tuple[list, dict]:
    root = export(rev, "sdk-typescript", dest)
    (root / "node_modules").symlink_to(REPO / "sdk-typescript" / "node_modules")
    tsc = str(REPO / "sdk-typescript" / "node_modules" / "typescript" / "bin" / "tsc")
    _run(["node", tsc, "-p", "tsconfig.build.json", "--outDir", "dist"], root, "typescript before")
    env = {"ORCH8_TS_SDK": str(root / "dist" / "index.js")}
    return ["node", str(BENCH / "sdk" / "ts_worker.mjs"), url, c, handler], env


def go_worker(url: str, c: str, handler: str, dest: Path, rev: str) -> tuple[list, dict]:
    sdk = export(rev, "sdk-go", dest)
    src = dest / "goworker"
    shutil.copytree(BENCH / "sdk" / "goworker", src)
    # The copy's relative replaces no longer resolve: point them at absolute paths.
    _run(["go", "mod", "edit", f"-replace={SDK_MODULE}={sdk}",
          f"-replace={SDK_MODULE}/orch8otel={REPO / 'sdk-go' / 'orch8otel'}"],
         src, "go before")  # fmt: skip
    binary = dest / "goworker-before"
    _run(
        ["go", "build", "-mod=mod", "-tags", "orch8before", "-o", str(binary), "."],
        src,
        "go before",
    )
    return [str(binary), url, c, handler], {}


BUILDERS = {"Python": python_worker, "TypeScript": typescript_worker, "Go": go_worker}


def worker(name: str, url: str, c: str, handler: str, workdir: Path) -> tuple[list, dict]:
    """(command, extra env) of `name`'s worker on the SDK at BASELINE_REV."""
    dest = workdir / f"before-{name.lower()}"
    dest.mkdir(parents=True, exist_ok=True)
    log(f"  building the {name} worker on the SDK before issue 18 ({BASELINE_REV[:7]})")
    return BUILDERS[name](url, c, handler, dest, BASELINE_REV)
