"""Processes the benchmark drives: the reference server, a throwaway PostgreSQL cluster,
the Go load client; and what we read about them (CPU seconds, RSS, load average)."""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
REPO = BENCH.parent
SERVER_BIN = REPO / ".venv" / "bin" / "orch8-server"
LOADGEN = BENCH / ".bin" / "loadgen"
TICK = os.sysconf("SC_CLK_TCK")

# The PostgreSQL harness the server tests use (initdb + pg_ctl in a temp dir, runuser
# when root); reused as is so both start the cluster the same way.
sys.path.insert(0, str(REPO / "server" / "tests"))
from pg_cluster import PgCluster, _bin_dir  # noqa: E402

__all__ = ["PgCluster"]  # re-exported for run.py and profile.py


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process, from /proc (includes reaped threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


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
        "server_version": version([str(SERVER_BIN), "--version"]),
        "git_commit": git + (" (server/ modified)" if dirty else ""),
    }


class Server:
    """One orch8-server process on a free port; stopped with SIGTERM (its drain path)."""

    def __init__(self, db: str, logdir: Path, name: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = logdir / f"server-{name}-{self.port}.log"
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [str(SERVER_BIN), "--db", db, "--port", str(self.port), "--log-level", "warning"],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until(self._started, 60, f"server {name} did not start")
        except RuntimeError as exc:
            self.stop()
            tail = self.log_path.read_text()[-1500:]
            raise RuntimeError(f"server {name} did not start: {exc}: {tail}") from exc

    def _started(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"server exited with {self.proc.returncode}")
        return _ready(self.url)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health/ready", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise RuntimeError(what)


def loadgen(*args: str, on_line: Callable[[str], None] | None = None) -> dict:
    """Run the Go client; returns its JSON answer plus its own wall time."""
    proc = subprocess.Popen(
        [str(LOADGEN), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None and proc.stdout is not None
    for line in proc.stderr:
        if on_line is not None:
            on_line(line.rstrip())
        else:
            print(line.rstrip(), flush=True)
    out = proc.stdout.read()
    if proc.wait() != 0:
        raise RuntimeError(f"loadgen {' '.join(args)} failed: {out}")
    return json.loads(out)


class Workdir:
    """A temp dir for databases and logs; logs are kept if a run fails."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="orch8-bench-"))

    def sqlite(self, name: str) -> str:
        return str(self.path / f"{name}.db")
