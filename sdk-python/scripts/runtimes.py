"""Consumer test on every supported Python (issue 14): the built wheel, outside the repo.

For each of 3.10, 3.11, 3.12 and 3.13 (found with pyenv):
  1. a fresh virtualenv in a temp dir outside the repository, the wheel installed into it;
  2. the unit tests (a copy of tests/unit) run against the INSTALLED package;
  3. the README's worker snippet (`<!-- consumer-test: worker -->`) run as written against a
     live server, fed by the README's enqueue snippet (`<!-- consumer-test: enqueue -->`)
     until it completed real tasks, then stopped with SIGTERM.
Two runtimes run at a time, each with a server of its own. A missing interpreter is
reported (and fails the run unless ORCH8_ALLOW_MISSING_PYTHON=1).
Prints one summary line per runtime.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from orch8_server.testing import start_server

HERE = Path(__file__).resolve().parents[1]  # sdk-python/
REPO = HERE.parent
# ORCH8_PYTHONS=3.10,3.13 narrows the run while iterating; `make test` runs all four.
VERSIONS = tuple(os.environ.get("ORCH8_PYTHONS", "3.10,3.11,3.12,3.13").split(","))
ENQUEUES = 3  # real tasks per runtime
# The unit tests of orch8.otel need the OpenTelemetry SDK (the wheel's [otel] extra brings
# only the API); the pins of requirements-dev.txt.
TEST_TOOLS = ("pytest==9.2.0", "respx==0.23.1", "opentelemetry-sdk==1.45.2")


@dataclass
class Result:
    version: str
    interpreter: str = ""
    steps: dict[str, str] = field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.error and bool(self.steps)


def snippet(readme: str, name: str) -> str:
    """The fenced python block right after `<!-- consumer-test: NAME -->` in the README."""
    match = re.search(rf"<!-- consumer-test: {name} -->\s*```python\n(.*?)```", readme, flags=re.S)
    if not match:
        sys.exit(f"runtimes: README.md has no `<!-- consumer-test: {name} -->` python block")
    return match.group(1)


def interpreter(version: str) -> str | None:
    """The newest pyenv-installed CPython of `version` (e.g. 3.10 -> .../3.10.13/bin/python)."""
    pyenv = shutil.which("pyenv")
    if pyenv:
        bare = subprocess.run(
            [pyenv, "versions", "--bare"], capture_output=True, text=True, check=False
        ).stdout.split()
        found = sorted(
            (v for v in bare if re.fullmatch(rf"{re.escape(version)}\.\d+", v)),
            key=lambda v: int(v.rsplit(".", 1)[1]),
        )
        if found:
            prefix = subprocess.run(
                [pyenv, "prefix", found[-1]], capture_output=True, text=True, check=False
            ).stdout.strip()
            candidate = Path(prefix) / "bin" / "python"
            if candidate.exists():
                return str(candidate)
    other = shutil.which(f"python{version}")
    return other


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        raise RuntimeError(f"`{' '.join(cmd[:4])} ...` exited {done.returncode}:\n{tail}")
    return done.stdout


def consumer(version: str, wheel: Path, readme: str) -> Result:
    print(f"runtimes: Python {version} ...", flush=True)
    result = Result(version)
    started = time.monotonic()
    python = interpreter(version)
    if python is None:
        result.error = "MISSING: no interpreter (pyenv install " + version + ")"
        return result
    result.interpreter = python
    workdir = Path(tempfile.mkdtemp(prefix=f"orch8-consumer-py{version}-"))
    try:
        assert REPO not in workdir.parents, "the consumer project must live outside the repo"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ORCH8_", "PYTHON"))}
        env.pop("VIRTUAL_ENV", None)
        run([python, "-m", "venv", str(workdir / "venv")], workdir)
        py = str(workdir / "venv" / "bin" / "python")
        pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        run([*pip, f"{wheel}[otel]", *TEST_TOOLS], workdir)  # the extra installs too
        got = run([py, "-c", "import orch8, sys; print(orch8.__file__, sys.version)"], workdir)
        if str(HERE) in got:
            raise RuntimeError(f"imported orch8 from the repo, not the wheel: {got}")
        result.steps["install"] = "ok"

        # The unit tests, against the installed package (a copy, so the repo is not on path).
        shutil.copytree(HERE / "tests" / "unit", workdir / "tests" / "unit")
        (workdir / "tests" / "__init__.py").write_text("")
        out = run(
            [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit"],
            workdir,
            env={**env, "ORCH8_SPEC": str(REPO / "openapi.yaml")},
            timeout=600,
        )
        result.steps["unit"] = out.strip().splitlines()[-1]

        # The README's worker, run as written, fed by the README's enqueue snippet, on a
        # server of its own: another runtime's worker must not complete this one's tasks.
        (workdir / "worker.py").write_text(snippet(readme, "worker"))
        (workdir / "enqueue.py").write_text(snippet(readme, "enqueue"))
        with start_server() as server:
            app_env = {**env, "ORCH8_URL": server.url}
            log = (workdir / "worker.log").open("wb")
            worker = subprocess.Popen(
                [py, "worker.py"], cwd=workdir, env=app_env, stdout=log, stderr=subprocess.STDOUT
            )
            try:
                for _ in range(ENQUEUES):
                    printed = run([py, "enqueue.py"], workdir, env=app_env, timeout=60).strip()
                    if not printed.startswith("completed {'words': 5"):
                        raise RuntimeError(f"enqueue snippet printed {printed!r}")
                result.steps["readme"] = f"{ENQUEUES} tasks completed"
            finally:
                worker.send_signal(signal.SIGTERM)
                try:
                    code = worker.wait(35)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    code = None
                log.close()
        text = (workdir / "worker.log").read_text(errors="replace")
        if code != 0 or "worker stopped" not in text:
            raise RuntimeError(f"worker exited {code} after SIGTERM:\n{text[-3000:]}")
        result.steps["shutdown"] = "exit 0"
    except Exception as exc:
        result.error = str(exc)
    finally:
        result.seconds = time.monotonic() - started
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def main() -> int:
    subprocess.run([str(HERE / "scripts" / "dist.sh")], check=True, stdout=subprocess.DEVNULL)
    built = sorted((HERE / "dist").glob("orch8-*.whl"))
    if len(built) != 1:
        sys.exit(f"runtimes: expected one wheel in dist/, found {built}")
    # A private copy: a concurrent `make dist` may empty dist/ while the runtimes install.
    keep = Path(tempfile.mkdtemp(prefix="orch8-wheel-"))
    wheels = [Path(shutil.copy2(built[0], keep))]
    readme = (HERE / "README.md").read_text()
    # Two runtimes at a time: each mostly waits on pip and on its subprocesses.
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda v: consumer(v, wheels[0], readme), VERSIONS))
    allow_missing = os.environ.get("ORCH8_ALLOW_MISSING_PYTHON") == "1"
    print(f"\nconsumer test of {wheels[0].name} (outside the repo), per runtime:")
    failed = 0
    for r in results:
        if r.ok:
            steps = "; ".join(f"{k}: {v}" for k, v in r.steps.items())
            print(f"  PASS  Python {r.version} ({r.seconds:.0f} s) {steps}")
            continue
        missing = r.error.startswith("MISSING")
        failed += 0 if missing and allow_missing else 1
        print(
            f"  {'MISSING' if missing else 'FAIL'}  Python {r.version}: {r.error.removeprefix('MISSING: ')}"
        )
    shutil.rmtree(keep, ignore_errors=True)
    passed = sum(r.ok for r in results)
    print(f"runtimes: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
