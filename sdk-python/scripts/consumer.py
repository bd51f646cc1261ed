"""README consumer test (issue 32): every code block of README.md, run as a user runs it.

Builds the wheel and installs it (with the [otel] extra) into a fresh virtualenv in a temp
dir outside the repository. Each block marked `<!-- consumer-test: NAME -->` is saved there
as NAME.py and run with that venv's python against a live server of its own; SCENARIOS says
how each is driven and what it must do. A block marked `<!-- not-runnable: why -->` is
listed as skipped with that reason. A block with neither marker, a runnable block that no
scenario runs, or a scenario naming no block fails the run. scripts/runtimes.py runs the
worker and enqueue blocks on every supported Python; this runs every block once.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from orch8_server.testing import start_server

from orch8 import Orch8Client

HERE = Path(__file__).resolve().parents[1]  # sdk-python/
REPO = HERE.parent
FENCE = re.compile(r"^```(\S*)$")
MARKER = re.compile(r"^<!-- (consumer-test|not-runnable): (.+?) -->$")


@dataclass
class Block:
    line: int
    lang: str
    code: str
    name: str | None = None  # runnable: saved as NAME.py
    skip: str | None = None  # not runnable: why


def readme_blocks(text: str) -> list[Block]:
    """The README's fenced blocks with their markers; exits naming any unmarked block."""
    lines = text.split("\n")
    blocks: list[Block] = []
    unmarked: list[int] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        end = lines.index("```", i + 1)
        before = i - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        marker = MARKER.match(lines[before]) if before >= 0 else None
        block = Block(i + 1, opened[1] or "text", "\n".join(lines[i + 1 : end]) + "\n")
        if marker is None:
            unmarked.append(i + 1)
        elif marker[1] == "consumer-test":
            block.name = marker[2]
            blocks.append(block)
        else:
            block.skip = marker[2]
            blocks.append(block)
        i = end + 1
    if unmarked:
        sys.exit(
            f"consumer: README.md blocks at line {', '.join(map(str, unmarked))} have neither "
            "<!-- consumer-test: NAME --> nor <!-- not-runnable: why --> before them"
        )
    return blocks


def wait_for(check: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    """Polls `check` until it returns something truthy, or fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def expect(ok: bool, message: str) -> None:
    if not ok:
        raise AssertionError(message)


class Program:
    """A README program started in the background (a worker), stopped with SIGTERM."""

    def __init__(self, name: str, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.name, self.proc, self.log = name, proc, log

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name}.py exited {self.proc.returncode}:\n{self.output()}")
        return True

    def stop(self) -> str:
        """SIGTERM, then the clean exit the README promises; returns the program's output."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(35)
        except subprocess.TimeoutExpired:
            code = None
        expect(code == 0, f"{self.name}.py exited {code} after SIGTERM:\n{self.output()[-3000:]}")
        return self.output()


class Consumer:
    """The user's project: a fresh venv with the wheel, and the README's blocks as files."""

    def __init__(self, workdir: Path, blocks: list[Block]) -> None:
        self.workdir = workdir
        self.python = str(workdir / "venv" / "bin" / "python")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ORCH8_", "PYTHON"))}
        env.pop("VIRTUAL_ENV", None)
        self.base_env = env
        for block in blocks:
            if block.name:
                (workdir / f"{block.name}.py").write_text(block.code)

    def env(self, url: str, **extra: str) -> dict[str, str]:
        return {**self.base_env, "ORCH8_URL": url, **extra}

    def run(self, name: str, *args: str, env: dict[str, str], timeout: float = 60) -> str:
        """Runs NAME.py to its end (exit 0 expected); returns what it printed."""
        done = subprocess.run(
            [self.python, f"{name}.py", *args],
            cwd=self.workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        expect(done.returncode == 0, f"{name}.py exited {done.returncode}:\n{done.stderr[-3000:]}")
        return done.stdout

    @contextmanager
    def started(self, name: str, *args: str, env: dict[str, str]) -> Iterator[Program]:
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [self.python, f"{name}.py", *args],
                cwd=self.workdir,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            yield Program(name, proc, log)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def wait_completed(client: Orch8Client, task_id: str, program: Program, what: str) -> Any:
    """The task once completed; fails if it ends otherwise or the program dies first."""

    def check() -> Any:
        program.alive()
        task = client.get_task(task_id)
        expect(task.status in ("pending", "running", "completed"), f"{what}: {task.status}")
        return task if task.status == "completed" else None

    return wait_for(check, what)


def worker_and_enqueue(c: Consumer) -> None:
    with start_server() as server:
        env = c.env(server.url)
        with c.started("worker", env=env) as worker:
            printed = c.run("enqueue", env=env).strip()
            expect(printed == "completed {'words': 5, 'longest': 'quick'}", f"enqueue: {printed!r}")
            client = Orch8Client(server.url)
            bad = client.enqueue("word_count", params={"text": 42}).id
            task = wait_for(
                lambda: (t := client.get_task(bad)).status == "failed" and t, "bad task"
            )
            expect(task.error.code == "bad_input", f"the bad task failed with {task.error}")
            expect("worker stopped" in worker.stop(), "the worker logged its stop")


def queues(c: Consumer) -> None:
    for mode, names in (("strict", ("high", "low")), ("weighted", ("bulk", "trickle"))):
        with start_server() as server, c.started("queues", mode, env=c.env(server.url)) as worker:
            client = Orch8Client(server.url)
            ids = {
                q: client.enqueue("word_count", queue_name=q, params={"text": "a b"}).id
                for q in names
            }
            for q, task_id in ids.items():
                task = wait_completed(client, task_id, worker, f"{mode}: the {q} task")
                expect(task.output == {"queue": q, "words": 2}, f"{mode}: {q} output {task.output}")
            worker.stop()


def controls(c: Consumer) -> None:
    with start_server() as server:
        lines = c.run("controls", env=c.env(server.url)).splitlines()
        expect(lines[0] == "[('emails', 4, 0)]", f"controls printed {lines[:3]}")
        expect(len(lines) == 2 + 15, f"15 history points, then nothing: {lines}")
        expect(Orch8Client(server.url).queue_stats().queue_controls == [], "the cap is removed")


def keys(c: Consumer) -> None:
    with start_server() as server:
        printed = c.run("keys", env=c.env(server.url)).splitlines()
        expect(printed == ["concurrency_key 1 1", "c-7 2"], f"keys printed {printed}")


def instance_keys(c: Consumer) -> None:
    with start_server() as server:
        printed = c.run("instance_keys", env=c.env(server.url)).splitlines()
        want = ["running ['pending']", "concurrency_key 2 2", "acme 2 ['running']"]
        expect(printed == want, f"instance_keys printed {printed}")


def rates(c: Consumer) -> None:
    with start_server() as server:
        printed = c.run("rates", env=c.env(server.url)).splitlines()
        want = ["partner-api 10 1000 2", "rate_limited", "[('partner-api', 1)]", "no_poller"]
        expect(printed == want, f"rates printed {printed}")


def telemetry(c: Consumer) -> None:
    with start_server() as server:
        printed = c.run("telemetry", env=c.env(server.url))
        expect(printed == "", f"telemetry printed {printed!r}")


def tenants(c: Consumer) -> None:
    keys = c.workdir / "keys.toml"
    entries = [
        ("p-acme", "producer-secret-acme", "producer"),
        ("a-acme", "admin-secret-acme", "admin"),
    ]
    keys.write_text(
        "".join(
            f'[[key]]\nid = "{key_id}"\nsha256 = "{hashlib.sha256(secret.encode()).hexdigest()}"\n'
            f'role = "{role}"\ntenant = "acme"\n\n'
            for key_id, secret, role in entries
        )
    )
    with start_server("--keys-file", str(keys)) as server:
        printed = c.run("tenants", env=c.env(server.url, ORCH8_API_KEY="producer-secret-acme"))
        expect(printed == "p-acme producer acme\n403 forbidden\n", f"tenants printed {printed!r}")
        admin = Orch8Client(server.url, "admin-secret-acme", tenant="acme")
        handlers = [t.handler_name for t in admin.list_tasks().tasks]
        expect(handlers == ["resize"], f"acme's tasks: {handlers}")


def workflows(c: Consumer) -> None:
    with start_server() as server:
        printed = c.run("workflows", env=c.env(server.url)).splitlines()
        expect(
            printed
            == [
                "completed {'archived': 'https://cdn.example.com/cat.png?w=200', 'why': 'private images are not published'}",
                "[('resize', None, 'completed'), ('delivery', None, 'completed'), ('publish', 'try', 'failed'), "
                "('archive', 'catch', 'completed')]",
            ],
            f"workflows printed {printed}",
        )


def client(c: Consumer) -> None:
    with start_server() as server:
        printed = c.run("client", env=c.env(server.url))
        expect(printed == "", f"client printed {printed!r}")
        tasks = Orch8Client(server.url).list_tasks().tasks
        expect([t.handler_name for t in tasks] == ["word_count"], f"tasks: {tasks}")


def pytest_run(c: Consumer, *args: str, env: dict[str, str]) -> str:
    """pytest (this repo's version, installed once) in the user's venv; returns its output."""
    if not (c.workdir / "venv" / "bin" / "pytest").exists():
        pytest = f"pytest=={version('pytest')}"
        subprocess.run([c.python, "-m", "pip", "install", "-q", pytest], check=True, cwd=c.workdir)
    done = subprocess.run(
        [c.python, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=c.workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    expect(done.returncode == 0, f"pytest exited {done.returncode}: {done.stdout[-3000:]}")
    return done.stdout


def test_worker(c: Consumer) -> None:
    """The README's handler unit tests, run by pytest in the user's venv with no server."""
    # Nothing listens at ORCH8_URL: the tests need no server.
    printed = pytest_run(c, "-q", "test_worker.py", env=c.env("http://127.0.0.1:9"))
    expect("4 passed" in printed, f"pytest: {printed[-3000:]}")


def test_workflows(c: Consumer) -> None:
    """The README's workflow tests: the fixture comes from the installed wheel's pytest11
    entry point, the server from ORCH8_SERVER (the monorepo's), as a user would set it."""
    found = shutil.which("orch8-server", path=str(Path(sys.executable).parent))
    env = {**c.base_env, "ORCH8_SERVER": found or f"{sys.executable} -m orch8_server"}
    printed = pytest_run(c, "-vv", "--durations=0", "test_workflows.py", env=env)
    expect("3 passed" in printed, f"pytest: {printed[-3000:]}")
    # The README's promise: the skipped backoff and hour take well under a second each
    # (the server's start is the fixture's setup, not the test's call).
    durations = re.findall(r"^([\d.]+)s call +test_workflows\.py::(\w+)$", printed, re.M)
    calls = {name: float(seconds) for seconds, name in durations}
    for name in ("test_the_retry_backoff_is_skipped", "test_a_one_hour_sleep_step_is_skipped"):
        expect(calls.get(name, 99.0) < 1.0, f"{name} took {calls.get(name)} s: {printed[-2000:]}")


# Which README blocks each scenario runs.
SCENARIOS: list[tuple[tuple[str, ...], Callable[[Consumer], None]]] = [
    (("worker", "enqueue"), worker_and_enqueue),
    (("queues",), queues),
    (("controls",), controls),
    (("keys",), keys),
    (("instance_keys",), instance_keys),
    (("rates",), rates),
    (("telemetry",), telemetry),
    (("tenants",), tenants),
    (("workflows",), workflows),
    (("client",), client),
    (("test_worker",), test_worker),
    (("test_workflows",), test_workflows),
]


def make_venv(workdir: Path) -> None:
    """Builds the wheel (dist.sh) and installs a private copy into workdir/venv."""
    subprocess.run([str(HERE / "scripts" / "dist.sh")], check=True, stdout=subprocess.DEVNULL)
    built = sorted((HERE / "dist").glob("orch8-*.whl"))
    expect(len(built) == 1, f"one wheel in dist/, found {built}")
    # A private copy: a concurrent `make dist` may empty dist/ while pip installs.
    wheel = Path(shutil.copy2(built[0], workdir))
    subprocess.run([sys.executable, "-m", "venv", str(workdir / "venv")], check=True)
    pip = [str(workdir / "venv" / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"{wheel}[otel]"], check=True, cwd=workdir)


def main() -> int:
    blocks = readme_blocks((HERE / "README.md").read_text())
    runnable = [b.name for b in blocks if b.name]
    covered = [name for names, _ in SCENARIOS for name in names]
    problems = [f"README block {n!r} is run by no scenario" for n in runnable if n not in covered]
    problems += [f"scenario block {n!r} is not in README.md" for n in covered if n not in runnable]
    if problems or len(set(runnable)) != len(runnable):
        sys.exit("consumer: " + "; ".join(problems or [f"repeated block names in {runnable}"]))
    skipped = [b for b in blocks if b.skip]
    workdir = Path(tempfile.mkdtemp(prefix="orch8-py-readme-"))
    failed = 0
    try:
        expect(REPO not in workdir.parents, "the consumer project lives outside the repo")
        make_venv(workdir)
        consumer = Consumer(workdir, blocks)
        print(f"consumer: README.md blocks, from the wheel in a fresh venv ({workdir}):")
        for names, scenario in SCENARIOS:
            started = time.monotonic()
            try:
                scenario(consumer)
                print(
                    f"  PASS  {' + '.join(names)} ({time.monotonic() - started:.0f} s)", flush=True
                )
            except Exception as exc:  # one failing block must not hide the others
                failed += 1
                print(f"  FAIL  {' + '.join(names)}: {exc}", flush=True)
        for b in skipped:
            print(f"  SKIP  README.md:{b.line} ({b.lang}): {b.skip}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"consumer: {len(SCENARIOS) - failed} passed, {failed} failed, {len(skipped)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
