"""Starts and restarts the reference server on a fixed loopback port and a fresh database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from .api import Api

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SERVER = ROOT / ".venv" / "bin" / "orch8-server"

# Scenario `server` keys -> orch8-server flags (docs/protocol.md section 13).
FLAGS = {
    "lease_ms": "--lease-ms",
    "wait_ms": "--wait-ms",
    "max_wait_ms": "--max-wait-ms",
    "reaper_interval_ms": "--reaper-interval-ms",
    "worker_heartbeat_ms": "--worker-heartbeat-ms",
    "worker_dead_after_ms": "--worker-dead-after-ms",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ReferenceServer:
    """One orch8-server process; `restart()` keeps its port and database."""

    def __init__(self, workdir: Path, settings: dict, db: str | None = None) -> None:
        self.db = db or str(workdir / "orch8.db")
        self.log_path = workdir / "server.log"
        self.settings = settings
        self.proc: subprocess.Popen | None = None
        self._use_port(free_port())

    def _use_port(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.api = Api(self.url)
        self.args = [str(DEFAULT_SERVER), "--host", "127.0.0.1", "--port", str(port)]
        self.args += ["--db", self.db, "--log-level", "warning"]
        for key, value in self.settings.items():
            self.args += [FLAGS[key], str(value)]

    def first_start(self) -> None:
        """Start on a free port; another run may grab the same port first, so retry on a new one."""
        for _ in range(3):
            try:
                return self.start()
            except RuntimeError:
                if "address already in use" not in self.tail(20):
                    raise
                self._use_port(free_port())
        return self.start()

    def start(self, timeout: float = 20.0) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        env = {k: v for k, v in os.environ.items() if not k.startswith("ORCH8_")}
        self.proc = subprocess.Popen(self.args, stdout=log, stderr=log, env=env)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"orch8-server exited with {self.proc.returncode}; see {self.log_path}")
            if self.api.ready():
                return
            time.sleep(0.05)
        raise RuntimeError(f"orch8-server not ready within {timeout} s; see {self.log_path}")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (the server drains), then SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def restart(self, down_s: float) -> None:
        self.stop()
        time.sleep(down_s)  # the outage the scenario asked for
        self.start()

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
