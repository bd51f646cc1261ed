"""Processes the benchmark drives: the reference server (through the shared launcher
`orch8_server.testing`), a throwaway PostgreSQL cluster, the Go load client and its
canned-answer stub; and what we read about them (CPU seconds, RSS, load average)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
REPO = BENCH.parent
SERVER_PYTHON = REPO / ".venv" / "bin" / "python"
LOADGEN = BENCH / ".bin" / "loadgen"
TICK = os.sysconf("SC_CLK_TCK")

# The one server launcher of the repo (issue 19): bench's own venv does not install the
# server, and the launcher module is stdlib-only, so it is imported from the source tree
# and starts the server with the root venv's interpreter (SERVER_PYTHON).
sys.path.insert(0, str(REPO / "server"))
# The PostgreSQL harness the server tests use (initdb + pg_ctl in a temp dir, runuser
# when root); reused as is so both start the cluster the same way.
sys.path.insert(0, str(REPO / "server" / "tests"))
from orch8_server.testing import RunningServer, start_server  # noqa: E402
from pg_cluster import PgCluster, _bin_dir  # noqa: E402

__all__ = ["PgCluster", "RunningServer"]  # re-exported for run.py and profile.py


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process, from /proc (includes reaped threads)."""
    fields = proc_stat(pid)
    return (int(fields[11]) + int(fields[12])) / TICK


def cluster_cpu_seconds(cluster: PgCluster) -> float:
    """CPU seconds a PostgreSQL cluster has spent so far: its postmaster, every live child
    (backends, WAL writer, checkpointer, autovacuum workers) and the children it has
    already reaped (the postmaster's cutime + cstime). Read from /proc, as cpu_seconds."""
    postmaster = postmaster_pid(cluster)
    fields = proc_stat(postmaster)
    total = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return (total + sum(children_ticks(postmaster).values())) / TICK


def postmaster_pid(cluster: PgCluster) -> int:
    return int((cluster.data / "postmaster.pid").read_text().split()[0])


def children_ticks(parent: int) -> dict[int, int]:
    """utime + stime in clock ticks of each live child of `parent`, by pid. A child that
    ends meanwhile is left out: its time is in the parent's cutime once reaped."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            child = proc_stat(int(entry.name))
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(child[1]) == parent:
            out[int(entry.name)] = int(child[11]) + int(child[12])
    return out


def pg_settings(ap: argparse.ArgumentParser, given: list[str]) -> dict[str, str]:
    """`--pg-setting NAME=VALUE` options as a dict; a malformed one is the parser's error."""
    out = {}
    for setting in given:
        name, eq, value = setting.partition("=")
        if not eq or not name.strip():
            ap.error(f"--pg-setting {setting!r}: expected NAME=VALUE")
        out[name.strip()] = value.strip()
    return out


def proc_stat(pid: int) -> list[str]:
    """/proc/PID/stat after the command name: state, ppid, ... (proc(5) fields 3 on)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def rss_mb(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS = VmHWM) in MiB."""
    cur = peak = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            cur = int(line.split()[1]) / 1024
        elif line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
    return cur, peak


def machine() -> dict:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])

    def version(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return "n/a"

    try:
        pg_version = version([str(_bin_dir() / "postgres"), "--version"])
    except RuntimeError:
        pg_version = "n/a"
    git = version(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"])
    dirty = version(["git", "-C", str(REPO), "status", "--porcelain", "--", "server"])
    return {
        "host": socket.gethostname(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": version([str(REPO / ".venv" / "bin" / "python"), "--version"]),
        "go": version(["go", "version"]),
        "node": version(["node", "--version"]),
        "postgresql": pg_version,
        "server_version": version([str(SERVER_PYTHON), "-m", "orch8_server", "--version"]),
        "git_commit": git + (" (server/ modified)" if dirty else ""),
    }


def launch_server(db: str, logdir: Path, name: str) -> RunningServer:
    """One orch8-server on a port it picks itself (`--port 0`, read from its listening
    line); `stop()` sends SIGTERM (its drain path), `.process.pid` is what we measure."""
    return start_server(
        "--log-level",
        "warning",
        db=db,
        log=logdir / f"server-{name}.log",
        python=str(SERVER_PYTHON),
        timeout=60,
    )


def start_stub(batch: int) -> tuple[subprocess.Popen[str], str]:
    """The load client's canned-answer stub on a port it picks itself; returns once it
    printed its address (`loadgen stub listening on http://HOST:PORT`)."""
    proc = subprocess.Popen(
        [str(LOADGEN), "-mode=stub", "-listen=127.0.0.1:0", f"-batch={batch}"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()  # EOF (exit) gives "", caught below
    prefix = "loadgen stub listening on "
    if not line.startswith(prefix):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"loadgen stub did not start (exit {proc.returncode}): {line!r}")
    return proc, line.removeprefix(prefix)


# Load-client shape per batch size: producers, consumers (goroutines, keep-alive each).
SHAPE = {1: (4, 8), 10: (2, 4), 50: (2, 4), 100: (2, 4)}


def e2e_args(url: str, batch: int, tasks: int, warmup: int) -> list[str]:
    """The load client's arguments of one end-to-end row (`loadgen -mode=run`, the shape of
    SHAPE): every end-to-end figure of the bench is measured with these."""
    prod, cons = SHAPE[batch]
    return [
        "-mode=run", f"-url={url}", f"-batch={batch}", f"-n={tasks}", f"-warmup={warmup}",
        f"-producers={prod}", f"-consumers={cons}",
    ]  # fmt: skip


WINDOW_START = "loadgen: measured window start"
WINDOW_END = "loadgen: measured window end"


def loadgen_window(pid: int, *args: str, db: Callable[[], float] | None = None) -> dict:
    """`loadgen -mode=run` plus `cpu_s`: the CPU seconds process `pid` (the server under
    test) spent between the client's measured-window markers, warm-up excluded; with `db`
    (a clock of the database's CPU seconds, cluster_cpu_seconds), `db_cpu_s` likewise."""
    marks: dict[str, float] = {}

    def on_line(line: str) -> None:
        if line in (WINDOW_START, WINDOW_END):
            at = "start" if line == WINDOW_START else "end"
            marks[at] = cpu_seconds(pid)
            if db is not None:
                marks[f"db_{at}"] = db()
        else:
            print(line, flush=True)

    out = loadgen(*args, on_line=on_line)
    if "start" in marks and "end" in marks:
        out["cpu_s"] = marks["end"] - marks["start"]
    if "db_start" in marks and "db_end" in marks:
        out["db_cpu_s"] = marks["db_end"] - marks["db_start"]
    return out


def start_minimal(target: str, logdir: Path, name: str) -> tuple[subprocess.Popen[str], str]:
    """The minimal HTTP loop (orch8bench/minimal_http.py) on a port it picks itself, run by
    the root venv's interpreter (Starlette, uvicorn) like the server; returns once it
    printed its address."""
    log_file = open(logdir / f"minimal-{name}.log", "w")  # noqa: SIM115 (lives with the process)
    proc = subprocess.Popen(
        [str(SERVER_PYTHON), "-m", "orch8bench.minimal_http", target],
        stdout=subprocess.PIPE, stderr=log_file, text=True, cwd=BENCH,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    prefix = "orch8-minimal listening on "
    if not line.startswith(prefix):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"minimal HTTP loop did not start (exit {proc.returncode}): {line!r}")
    return proc, line.removeprefix(prefix)


def revisions() -> dict[str, str]:
    """Per package: the last commit that touched it, and whether the working tree differs
    from it (what a measurement of that package's code really measured)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                              timeout=20).stdout.strip()  # fmt: skip

    out = {}
    for pkg in ("server", "sdk-python", "sdk-typescript", "sdk-go"):
        rev = git("log", "-1", "--format=%h", "--", pkg)
        dirty = git("status", "--porcelain", "--", pkg)
        out[pkg] = rev + (" + uncommitted changes" if dirty else " (clean)")
    # The TypeScript worker runs sdk-typescript/dist (gitignored): say if it predates src/.
    dist, src = REPO / "sdk-typescript" / "dist" / "index.js", REPO / "sdk-typescript" / "src"
    newest = max((f.stat().st_mtime for f in src.rglob("*.ts")), default=0.0)
    if dist.exists() and dist.stat().st_mtime < newest:
        out["sdk-typescript"] += ", dist/ older than src/ (stale build)"
    return out


def loadgen(*args: str, on_line: Callable[[str], None] | None = None, timeout: float = 900) -> dict:
    """Run the Go client; returns its JSON answer plus its own wall time. Killed after
    `timeout` seconds (a task lost by the system under test would hang it forever)."""
    proc = subprocess.Popen(
        [str(LOADGEN), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None and proc.stdout is not None
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    try:
        for line in proc.stderr:
            if on_line is not None:
                on_line(line.rstrip())
            elif not line.startswith("loadgen: measured window"):  # markers: loadgen_window
                print(line.rstrip(), flush=True)
        out = proc.stdout.read()
        code = proc.wait()
    finally:
        watchdog.cancel()
    if code != 0:
        raise RuntimeError(f"loadgen {' '.join(args)} failed (exit {code}): {out}")
    return json.loads(out)


class Workdir:
    """A temp dir for databases and logs; logs are kept if a run fails."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="orch8-bench-"))

    def sqlite(self, name: str) -> str:
        return str(self.path / f"{name}.db")
